package keys

// Queues is the hash of a namespace's queue layouts: one field per
// registered queue, its value the layout every party must agree on
// (store.Layout, lua/layout.lua). A hash tag of its own, {ns:queues},
// apart from every partition's: it is read once per queue per process,
// never on a job's path.
func Queues(ns string) string { return "{" + ns + ":queues}" }

// Namespaces is the set of every namespace with a registered queue, on
// the whole Redis (outside any namespace): one key, so on a cluster it
// lives on one node that every client reaches.
const Namespaces = "sluice:namespaces"
