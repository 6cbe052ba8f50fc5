// Package idempotency makes a job's effects happen once even though its
// steps run at least once.
//
// Redis writes are declared as effects and committed by the same Lua script
// that checks the attempt's fence and records the step (step.Commit,
// step.Effect) or the job's completion (step.OnComplete): all or nothing,
// never from a stale attempt, never twice.
//
// Co-location rule: an effect on a key in the job's Redis Cluster slot is
// applied inside that script. Put the job's hash tag in a key (SlotKey) to
// get that. An effect on any other key is written, in the same atomic
// script, to the partition's outbox (a stream in the job's slot) and a
// worker relays it shortly afterwards, exactly once (a marker in the target
// key's slot remembers each applied effect for seven days). The rule is
// the same on a single Redis as on a cluster.
//
// For calls to external systems, Key gives an idempotency key that is the
// same in every attempt of a job's step, to pass to APIs that deduplicate
// requests (payment providers and the like); checkpoint their response with
// step.Run.
package idempotency
