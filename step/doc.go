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
// fence check, so they happen exactly once. OnComplete stages effects that
// commit with the job's completion instead; it belongs at handler level,
// after the steps, never inside a step function (where it returns
// ErrOnCompleteInStep and the step fails): a checkpointed step does not
// run again, so what it staged for the completion would be lost when a
// later attempt completes the job.
//
// Step names must be unique within a handler and their order stable: a
// handler whose sequence changed incompatibly since a job's checkpoint (a
// completed step name at another position) stops with ErrStaleCheckpoint
// and the job is parked (archived with reason stale_checkpoint) rather
// than mixing old and new state. Cursor steps (NewCursor) checkpoint the
// progress of a long loop.
//
// Jobs that sleep or wait for days resume under whatever code is deployed
// by then. To change the steps of such a workflow, put the change behind a
// change point, Version: each job records its version of the change the
// first time it gets there, so jobs that had gone past that place under
// the old code keep the old branch and the others take the new one. A
// change point takes no position in the step sequence, so adding one
// moves no step. docs/workflows.md lists what may change freely, what
// needs a change point, and how to retire an old branch.
//
// # Step boundaries
//
// A step's function runs only while the attempt owns the job. Before it
// runs (Run, Do, Commit; and at every Cursor.Advance, between a loop's
// items) the step checks what the worker already knows, at no cost — no
// Redis round trip:
//
//   - the lease is known lost (a renewal found it gone, a commit was
//     refused, an operator cancelled the job: the cancellation is pushed
//     to the worker): the step returns ErrStale, wrapping the cause
//     (runtime.ErrLeaseLost, runtime.ErrCancelled);
//   - the attempt's context is cancelled (timeout, deadline, shutdown):
//     the step returns the cause (context.Cause);
//   - by the worker's clock the lease may have run out since its last
//     successful renewal: the step first confirms ownership with Redis,
//     as a strict step does.
//
// A reclaim by another worker, which needs the lease to have expired, is
// caught by the last check (with clocks that agree on how long a lease
// lasts). Otherwise that knowledge can be late: by one delivery of an
// operator's cancellation (pub/sub), and by up to one renewal interval
// when the job was taken away some other way (the pub/sub message lost,
// the fence moved by hand). In that window a step's function can still
// start after ownership moved. A step whose function has external effects
// (a payment, an e-mail, a call to another service) can close it with
// Strict:
//
//	receipt, err := step.Run(ctx, "charge", charge, step.Strict())
//
// A strict step confirms with Redis, immediately before its function runs,
// that the attempt's lease ID and fence are current (one round trip, which
// also extends the lease); if they are not, the function does not run and
// the step returns ErrStale. That round trip is the step's own, whereas
// checkpoints are batched across attempts: on a workflow of no-op steps,
// strict steps cost several times the default's Redis time, a price for
// the steps whose effects need it. A step replayed from its checkpoint
// runs nothing and costs nothing either way.
//
// No check covers a function already running: ownership can move while it
// runs, and its context is then cancelled. Treat that cancellation as a
// hard stop. The fence protects Sluice's state in Redis only — the
// checkpoint and effects of a stale attempt are refused — not the outside
// world: code that ignores its context's cancellation can still cause
// external effects after ownership moved, so those must be idempotent
// (idempotency.Key) in any case.
package step
