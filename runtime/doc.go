// Package runtime is the Sluice worker: it claims jobs from Redis in
// batches, runs their handlers with leases that it renews in the
// background, enforces timeouts and deadlines, recovers panics, acks
// outcomes in opportunistic batches, reclaims jobs of crashed workers and
// shuts down gracefully.
//
// Execution is at-least-once. A worker owns a job only while its lease ID
// and fence are current; every write the worker makes for an attempt is a
// Lua script that checks that identity first, so a stalled or partitioned
// worker can never overwrite the attempt that replaced it. Fencing protects
// Sluice's state in Redis; it cannot undo external side effects of handler
// code that ignores its context's cancellation.
//
// Handlers of long operations use the lease-control surface on their
// context: ExtendLease, LeaseLost, ReportProgress (shown to operators on the
// job) and Go (tracked goroutines: success is not acked while they run).
// Options.OnDeath observes jobs once their move to archived is durable;
// Options.OnStuck receives evidence about attempts that ignore being told
// to stop or make no progress.
//
// Users normally register typed handlers with package flow and pass the
// flow.Registry to NewWorker.
package runtime
