// Package sticky routes jobs to a preferred worker — a warm cache, a local
// file, a GPU — with a fallback for when that worker does not come.
//
//	client.Enqueue(ctx, Resize{Image: id}, sticky.To("gpu-worker-2", sticky.After(30*time.Second)))
//
// The worker is the one whose runtime.Options.WorkerID is that name (give
// sticky workers stable IDs). Routing is decided in the claim script: a
// pinned job waits on its worker's own list, which no other worker reads,
// so pinned work never hides runnable unpinned work from other workers and
// a deep backlog pinned to one worker costs the others nothing. The
// preference survives retries, snoozes, crash recovery and redrive.
// Fallbacks:
//   - Wait: only that worker, ever.
//   - After(d): only that worker until the job has waited d unclaimed, then
//     any worker (at the front of its priority).
//   - FailAfter(d): archived with reason sticky_unavailable after d.
//
// A pinned job has no priority among other pinned jobs: a worker's pin list
// is first in, first out, and it is read before the shared lists.
package sticky

import (
	"time"

	"github.com/sluicehq/sluice/flow"
)

// Policy is what happens while the preferred worker does not claim a job.
type Policy struct {
	mode string
	d    time.Duration
}

// Wait keeps the job for its worker for ever, or until its deadline
// (flow.WithDeadline): then the first claim of any worker archives it
// (deadline_exceeded), so a worker that never comes back does not keep it.
func Wait() Policy { return Policy{mode: "wait"} }

// After hands the job to any worker once it has waited d unclaimed. Its
// worker's claim passing the job over (a concurrency key or rate class at
// its limit, a suspect it cannot take now) starts the wait over; a pause
// of the queue counts as waiting. A deadline (flow.WithDeadline) before
// d ends it as Wait's does.
func After(d time.Duration) Policy { return Policy{mode: "after", d: d} }

// FailAfter archives the job (reason sticky_unavailable) once it has waited
// d unclaimed, or at its deadline (deadline_exceeded), when that is sooner.
func FailAfter(d time.Duration) Policy { return Policy{mode: "fail", d: d} }

// To routes a job to worker with policy p. An invalid worker name or a
// non-positive delay is an flow.ErrInvalid error at enqueue.
func To(worker string, p Policy) flow.EnqueueOption {
	return flow.WithPreferredWorker(worker, p.mode, p.d)
}
