// Package step makes a handler a sequence of named durable steps.
//
// A step runs at most once successfully per job: when it returns, its result
// is checkpointed (msgpack) by one fenced Lua script — one round trip per
// step — and every later attempt of the job gets the stored result back
// without running the step again:
//
//	auth, err := step.Run(ctx, "authorize", func(ctx context.Context) (Auth, error) {
//		return payments.Authorize(ctx, idempotency.Key(ctx, "authorize"), order)
//	})
//	if err != nil {
//		return err
//	}
//	err = step.Commit(ctx, "debit", idempotency.HIncrBy(balanceKey, "cents", -order.Cents))
//
// A step that crashed mid-way runs again on the next attempt (at least once
// inside a step), so what it does outside Sluice must be idempotent: use
// idempotency.Key for external calls, and effects (Commit, Effect) for Redis
// writes, which apply in the same atomic script as the checkpoint and the
// fence check, so they happen exactly once.
//
// Step names must be unique within a handler and their order stable: a
// handler whose sequence changed incompatibly since a job's checkpoint (a
// completed step name at another position) stops with ErrStaleCheckpoint
// and the job is parked (archived with reason stale_checkpoint) rather
// than mixing old and new state. Cursor steps (NewCursor) checkpoint the
// progress of a long loop.
package step
