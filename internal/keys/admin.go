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
