package sluicetype

import "time"

// Effect is a Redis write committed together with a step's checkpoint or
// a job's completion, all or nothing, and only by the attempt that still
// owns the job. A write to a key in the job's cluster slot is made by the
// same script that checks the attempt's fence; a write to any other key
// goes to the job partition's outbox in that script and is relayed exactly
// once afterwards.
//
// Build effects with package idempotency (IncrBy, Set, ...) or
// flow.FollowUp rather than by hand.
type Effect struct {
	// Op is INCRBY, HINCRBY, SET, HSET, SADD, ZADD, XADD, RPUSH, PEXPIRE,
	// or OpEnqueue.
	Op string
	// Key is the key written (none for OpEnqueue).
	Key string
	// Args are the command's arguments after the key.
	Args []string
	// Job is the follow-up job of an OpEnqueue effect, in an encoding of
	// Sluice's own (made by flow.FollowUp).
	Job []byte
}

// OpEnqueue is the Op of an effect that enqueues a follow-up job.
const OpEnqueue = "ENQUEUE"

// DeadEffect is an effect committed on a key in another cluster slot that
// the relay could not apply: Redis refuses it (the key holds another type,
// the value would overflow, ...), or it is a follow-up job that cannot be
// enqueued. The commit stands and its other effects were applied; this one
// was not. It is kept in the dead stream of its job's partition, recorded
// on the job (an error of class "effect_dead"), logged at error level and
// counted in the metric sluice.effects.dead, until an operator sends it
// back (admin.Client.RedriveEffects, sluice effects redrive).
type DeadEffect struct {
	// ID names it for RedriveEffects: queue:partition:entry.
	ID string
	// JobID is the job whose commit wrote it ("" when unknown).
	JobID string
	// Error says why it could not be applied.
	Error string
	// Op, Key and Args are the write; Op is OpEnqueue for a follow-up job
	// (Key and Args empty), "" for an entry that could not be read.
	Op   string
	Key  string
	Args []string
	// At is when it was dead-lettered (store time).
	At time.Time
}
