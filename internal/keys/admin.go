package keys

import "strconv"

// Paused is the flag that stops claims on the partition while it exists
// (an operator paused the queue).
func (p Partition) Paused() string { return p.Prefix() + "paused" }

// Minute is the hash of what the partition finished during one minute
// (unix minute: unix ms / 60000): jobs per terminal state and the run
// times of completed attempts. lua/lib.lua writes it; it expires after two
// hours.
func (p Partition) Minute(minute int64) string {
	return p.Prefix() + "m:" + strconv.FormatInt(minute, 10)
}

// CancelChannel is the pub/sub channel on which workers learn that an
// operator cancelled a running job. The message is the cancelled lease ID.
func CancelChannel(ns string) string { return ns + ":cancel" }

// Workers names the keys of a namespace's registry of live workers. They
// share the hash tag {ns:workers}.
type Workers struct{ NS string }

// Tag is the registry's cluster hash tag, braces included.
func (w Workers) Tag() string { return "{" + w.NS + ":workers}" }

// Live is the zset of registered workers, scored by their last heartbeat
// (unix ms).
func (w Workers) Live() string { return w.Tag() + ":live" }

// WorkerPrefix is what every worker hash's name starts with.
func (w Workers) WorkerPrefix() string { return w.Tag() + ":w:" }

// Worker is the hash describing one worker (its queues and in-flight jobs);
// it expires when the worker stops heartbeating.
func (w Workers) Worker(id string) string { return w.WorkerPrefix() + id }

// RateBucket is the token bucket of a rate class (lua/lib_limits.lua),
// RateWait the list of its jobs waiting for a token.
func (p Partition) RateBucket(class string) string { return p.Prefix() + "rl:" + class }

// RateWait is the list of a rate class's jobs waiting for a token.
func (p Partition) RateWait(class string) string { return p.Prefix() + "rw:" + class }

// RateLetGo is the sorted set of a rate class's waiters let go to a ready
// list and not yet claimed, each scored with the time (ms) until which the
// class keeps a token promised to it (lua/lib_limits.lua promise).
func (p Partition) RateLetGo(class string) string { return p.Prefix() + "rg:" + class }

// ConcurrencyWait is the list of a concurrency key's jobs waiting for a
// slot; ConcurrencyWaiting counts them per key.
func (p Partition) ConcurrencyWait(key string) string { return p.Prefix() + "cw:" + key }

// ConcurrencyWaiting is the hash of how many jobs wait per concurrency
// key.
func (p Partition) ConcurrencyWaiting() string { return p.Prefix() + "cwn" }

// Pinned is the list of jobs that prefer worker (sticky routing), read by
// that worker's claims only; PinDeadlines scores pinned jobs by when their
// fallback applies.
func (p Partition) Pinned(worker string) string { return p.Prefix() + "pin:" + worker }

// PinDeadlines is the sorted set of pinned jobs by their fallback time
// (or deadline, if sooner), and of jobs waiting on a concurrency key or
// rate class by their deadline.
func (p Partition) PinDeadlines() string { return p.Prefix() + "pinx" }

// PinWorkers is the sorted set (every score 0) of the workers whose pin
// lists hold entries, by which a listing finds pinned jobs
// (lua/lib_ready.lua PIN_WORKERS).
func (p Partition) PinWorkers() string { return p.Prefix() + "pinw" }

// DataModel holds the partition's data model (the meaning of its keys)
// once a release that changed it has raised it; absent, it is model 1.
// The scripts of a release refuse a partition at a model newer than their
// own (store.DataModel, lua/lib.lua model_error).
func (p Partition) DataModel() string { return p.Prefix() + "dm" }
