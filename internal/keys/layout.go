package keys

// Queues is the hash of a namespace's queue layouts: one field per
// registered queue, its value the layout every party must agree on
// (store.Layout, lua/layout.lua). A hash tag of its own, {ns:queues},
// apart from every partition's: it is read once per queue per process,
// never on a job's path.
func Queues(ns string) string { return "{" + ns + ":queues}" }

// ResizeLock is queue's resize lock, in the registry's slot: a token held
// by the resize under way, or by a resume that found partitions a resize
// retired (lua/layout.lua), so that no two of them interleave.
func ResizeLock(ns, queue string) string { return Queues(ns) + ":resizing:" + queue }

// Namespaces is the set of every namespace with a registered queue, on
// the whole Redis (outside any namespace): one key, so on a cluster it
// lives on one node that every client reaches.
const Namespaces = "sluice:namespaces"

// Retention is the hash of how long each queue's workers keep the jobs
// that finish there (store.Retention): one field per queue, written by
// every worker that starts serving it (lua/retention.lua: the worker that
// started last wins, by the start on the store's clock that the record
// holds, so that a worker whose write failed at start and succeeds later
// replaces no newer record), read by operator calls that finish a job
// themselves (an operator's cancel).
// It shares Queues' hash tag, and is kept apart from Queues' fields so
// that no reader of layouts meets a value that is not one.
func Retention(ns string) string { return Queues(ns) + ":retention" }
