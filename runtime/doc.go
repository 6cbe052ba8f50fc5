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
// Options.OnDeath observes jobs once their move to archived or
// quarantined is durable; Options.OnStuck receives evidence about
// attempts that ignore being told to stop or make no progress.
//
// # Failures, events and middleware
//
// With the default Options.Logger (slog.Default()) a worker logs every
// attempt that fails (warn: a retry, with attempt n of max, the error and
// the next run), crashes (error: the panic and the top of its stack, or
// the lost lease and the job's new holder), is archived or quarantined
// (error, with the reason), under stable attribute keys (job, kind,
// queue, attempt, max_attempts, reason, err, panic, stack, next_run, ...;
// docs/operations.md lists them). Options.OnEvent follows every attempt
// (Event) off the job path, through a bounded queue. Options.Middleware
// wraps every handler; a handler's panic reaches it as a *PanicError.
//
// Users normally register typed handlers with package flow and pass the
// flow.Registry to NewWorker.
//
// # Telemetry
//
// Workers and clients report through the OpenTelemetry API only, to
// Options.TracerProvider and MeterProvider (flow.ClientOptions likewise),
// by default the global providers: no-ops, at no measurable cost, until
// the program installs an SDK with the exporter it wants
// (examples/telemetry wires the stdout one). While the tracer records
// nothing, an EnqueueMany call's jobs, and a worker's attempts with no
// trace context, share one span instead of making one each; a worker asks
// its tracer again every second, so a provider installed after it started
// takes effect within a second.
//
// Spans: "sluice.enqueue <kind>" (producer) per enqueued job;
// "sluice.attempt <kind>" (consumer) per attempt, ended when its outcome
// is acked, with attributes sluice.job.id, sluice.queue, sluice.job.kind,
// sluice.attempt, sluice.crash_attempt, sluice.fence, sluice.priority,
// sluice.worker.id, then sluice.outcome (the ack code: ok, retry, crash,
// ..., or lease_lost, rejected, or cancelled for a job an operator
// cancelled while it ran, which is no failure), sluice.job.state (the
// job's new state)
// and sluice.reason (the attempt's Event.Reason: what the job became, e.g.
// attempts_exhausted, crash_limit, lease_lost, ack_failed), with an error
// status and an exception event when the attempt failed (a completion
// whose effects could not apply included); "sluice.step <name>" per step.Run/Do/Commit (and
// flow.Spawn), a child of the span in the handler's context, with
// sluice.step, sluice.step.index and sluice.step.cached (its result came
// from the checkpoint). Step spans are only made when that span records.
//
// Trace context travels in the job's headers (flow.WithHeaders): the
// client injects the enqueue span's context (W3C traceparent/tracestate,
// or the global propagator's fields when one is installed) without
// overwriting the caller's headers, and a caller's own traceparent wins.
// Each attempt span is a child of that remote span, so a job's attempts,
// its steps and the jobs those steps spawn or follow up share the
// producer's trace; a job without trace context gets a new root span.
//
// Metrics, with attributes sluice.queue and sluice.job.kind:
// sluice.jobs.processed (also by sluice.outcome), sluice.jobs.failed
// (errors, timeouts, deadlines, panics, parked jobs, lost leases, rejected
// outcomes, completions whose effects could not apply), sluice.jobs.retried (failed attempts whose job runs again),
// sluice.jobs.crashed (panics and crash errors, not those the store
// refused as stale, which the reaper that took the job back counts; jobs
// the worker's reaper reclaims from an expired lease count with
// sluice.queue only; a job archived as malformed instead, its crash
// counter corrupt, was charged no crash and is not counted; a crash
// whose ack Redis never answered, after retrying until the lease ran
// out, is counted by the worker, as the store may have charged it, and
// counted again by the reaper that reclaims the job if the ack never
// ran: this metric can exceed the crashes charged during an outage),
// sluice.jobs.quarantined; sluice.effects.dead (effects the worker's
// relay dead-lettered, with sluice.queue only); histograms
// sluice.attempt.duration (seconds, worker clock) and sluice.job.latency
// (enqueue to claim, store clock, also by sluice.attempt.first: no
// failure before it); the gauge
// sluice.queue.depth per sluice.queue and sluice.job.state, read from the
// per-partition counters of the queues the worker serves, only when a
// reader collects and while the worker runs. Every worker of a queue
// reports the same depth: aggregate it with max, not sum. The client adds
// sluice.jobs.enqueued (jobs added, duplicates not counted).
package runtime
