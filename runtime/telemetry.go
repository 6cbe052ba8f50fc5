package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/telemetry"
)

// workerTelemetry instruments a worker (see the package doc, Telemetry): a span
// per attempt, counters and histograms of attempts, and the depth of the
// worker's queues. Instruments are made once per worker; without an SDK
// they are no-ops and no attribute is built.
type workerTelemetry struct {
	tracer trace.Tracer
	meter  metric.Meter
	worker string
	st     *store.Store
	parts  []keys.Partition // set by Run, before the gauge is watched

	processed, failed, retried, crashed, quarantined metric.Int64Counter
	deadEffects                                      metric.Int64Counter
	duration, latency                                metric.Float64Histogram
	depth                                            metric.Int64ObservableGauge

	// inert is a span of this worker's tracer that records nothing and
	// carries no trace context, and until when to share it (inertSpan).
	inert atomic.Pointer[inertSpan]
}

// inertSpan is a span that an attempt with no trace context of its own
// may share, instead of starting one (four allocations), until the
// monotonic time until: then the tracer is asked again, so that a tracer
// provider installed later (otel.SetTracerProvider) takes effect within
// inertFor.
type inertSpan struct {
	span  trace.Span
	until time.Duration // since monoStart
}

const inertFor = time.Second

// monoStart is the origin of inertSpan's monotonic times.
var monoStart = time.Now()

// attemptTelemetry is one attempt's span and when it started (worker
// clock).
type attemptTelemetry struct {
	span  trace.Span
	start time.Time
}

// secondBuckets suit durations from a millisecond to an hour.
var secondBuckets = metric.WithExplicitBucketBoundaries(
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

func newTelemetry(o Options, st *store.Store) *workerTelemetry {
	m := telemetry.Meter(o.MeterProvider)
	t := &workerTelemetry{tracer: telemetry.Tracer(o.TracerProvider), meter: m, worker: o.WorkerID, st: st}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		handle(err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), secondBuckets)
		handle(err)
		return h
	}
	t.processed = counter("sluice.jobs.processed", "{attempt}", "Attempts finished by this worker, by outcome.")
	t.failed = counter("sluice.jobs.failed", "{attempt}",
		"Attempts that failed: an error, timeout, deadline, panic or crash, a parked job, a lost lease, a rejected outcome or completion effects that could not apply.")
	t.retried = counter("sluice.jobs.retried", "{attempt}", "Failed attempts whose job will run again.")
	t.crashed = counter("sluice.jobs.crashed", "{job}",
		"Crashes: panics and crash errors of this worker's attempts (not those refused as stale, which a reaper counts), and jobs its reaper reclaimed from an expired lease.")
	t.quarantined = counter("sluice.jobs.quarantined", "{job}", "Jobs quarantined at the crash limit.")
	t.deadEffects = counter("sluice.effects.dead", "{effect}",
		"Effects on keys in other slots that could not be applied and were dead-lettered.")
	t.duration = histogram("sluice.attempt.duration", "How long attempts ran, from start to outcome (worker clock).")
	t.latency = histogram("sluice.job.latency", "Time from a job's enqueue to an attempt's claim (store clock).")
	var err error
	t.depth, err = m.Int64ObservableGauge("sluice.queue.depth", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs per state in each queue this worker serves (all partitions), read when collected."))
	handle(err)
	return t
}

func handle(err error) {
	if err != nil {
		otel.Handle(err) // the instrument returned is still usable
	}
}

// Start options of attempt spans: a child of the producer's span, or a
// new root (not a child of the worker's own context).
var (
	asChild = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	asRoot  = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithNewRoot()}
)

// startAttempt starts a's span, "sluice.attempt <kind>": a child of the
// span whose context the job's headers carry (the producer's enqueue span,
// or the step that spawned the job), else a new root. It records the
// enqueue-to-claim latency and returns ctx with the span.
func (t *workerTelemetry) startAttempt(ctx context.Context, a *Attempt, now time.Time) context.Context {
	a.tel.start = now
	opts := asRoot
	if len(a.Headers) > 0 {
		var h map[string]string
		if msgpack.Unmarshal(a.Headers, &h) == nil {
			ctx = telemetry.Extract(ctx, h)
		}
		if trace.SpanContextFromContext(ctx).IsRemote() {
			opts = asChild
		}
	}
	var span trace.Span
	if in := t.inert.Load(); in != nil && !trace.SpanContextFromContext(ctx).IsValid() && time.Since(monoStart) < in.until {
		span = in.span // ctx is left without it: a span with no context adds nothing
	} else {
		ctx, span = t.tracer.Start(ctx, "sluice.attempt", opts...)
		if !span.IsRecording() && !span.SpanContext().IsValid() {
			t.inert.Store(&inertSpan{span: span, until: time.Since(monoStart) + inertFor})
		}
	}
	a.tel.span = span
	if span.IsRecording() {
		span.SetName("sluice.attempt " + a.Kind)
		span.SetAttributes(
			telemetry.JobID.String(a.ID), telemetry.Queue.String(a.Queue), telemetry.Kind.String(a.Kind),
			telemetry.Attempt.Int(a.Attempt), telemetry.CrashAttempt.Int(a.CrashAttempt),
			telemetry.Fence.Int64(a.Fence), telemetry.Priority.Int(a.Priority), telemetry.Worker.String(t.worker))
	}
	if t.latency.Enabled(ctx) {
		first := a.Attempt == 0 && a.CrashAttempt == 0
		t.latency.Record(ctx, max(a.Claimed.Sub(a.Created), 0).Seconds(), metric.WithAttributes(
			telemetry.Queue.String(a.Queue), telemetry.Kind.String(a.Kind), telemetry.First.Bool(first)))
	}
	return ctx
}

// endAttempt ends a's span and counts its outcome. r is what the handler
// produced and cause what cancelled it (nil: nothing); acked says whether
// an outcome was written (ack, with result res): if not, the lease was
// lost first, or an operator cancelled the job (cause ErrCancelled). o is
// the outcome as its record and event tell it (describe): the span gives
// its reason and its time.
func (t *workerTelemetry) endAttempt(a *Attempt, r result, cause error, acked bool, ack store.Ack, res store.AckResult, o *settled) {
	now := o.at
	outcome, state := "lease_lost", ""
	if !acked && errors.Is(cause, ErrCancelled) {
		// an operator cancelled the job: no failure, as its event says
		// (EventCancelled) and its log does (no record)
		outcome, state = stateCancelled, stateCancelled
	}
	if acked {
		outcome, state = string(ack.Code), res.State
		if res.Err != nil {
			outcome, state = "rejected", ""
		}
	}
	// a crash the store refused as stale was charged by the reaper that
	// took the job back, which counts it; one whose answer was lost may
	// have been charged here, and is counted (a reaper that charges it
	// after all counts it again); one the store archived ('malformed': a
	// crash counter that cannot be counted) was charged nothing
	crash := acked && !errors.Is(res.Err, store.ErrStale) && ack.Code == store.CodeCrash && res.State != "archived"
	var failed bool
	switch {
	case outcome == "lease_lost" || outcome == "rejected":
		failed = true
	case ack.Code == store.CodeCrash || ack.Code == store.CodeRetry || ack.Code == store.CodeDeadline || ack.Code == store.CodePark:
		failed = true
	case res.Reason != "": // archived for its corrupt data, whatever it asked (a suspend)
		failed = true
	case outcome == string(store.CodeOK) && state != "completed":
		// its effects could not apply: a retry, archived when it was the
		// last attempt (or malformed)
		failed = true
	}
	// a deadline that Redis's clock has not reached yet leaves the job
	// scheduled at it, for a claim to archive then: it does not run again
	retried := failed && state != "" && !terminal(state) && ack.Code != store.CodeDeadline
	// Metrics first, the span last: whoever sees the span ended sees the
	// attempt counted.
	if ctx := context.Background(); t.processed.Enabled(ctx) {
		job := metric.WithAttributes(telemetry.Queue.String(a.Queue), telemetry.Kind.String(a.Kind))
		add := func(c metric.Int64Counter, yes bool) {
			if yes {
				c.Add(ctx, 1, job)
			}
		}
		add(t.failed, failed)
		add(t.retried, retried)
		add(t.crashed, crash)
		add(t.quarantined, state == "quarantined")
		t.processed.Add(ctx, 1, metric.WithAttributes(
			telemetry.Queue.String(a.Queue), telemetry.Kind.String(a.Kind), telemetry.Outcome.String(outcome)))
		t.duration.Record(ctx, max(now.Sub(a.tel.start), 0).Seconds(), job)
	}
	span := a.tel.span
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(telemetry.Outcome.String(outcome))
		if state != "" {
			span.SetAttributes(telemetry.State.String(state))
		}
		if o.reason != "" { // its event's: what the job became, not what the ack asked
			span.SetAttributes(telemetry.Reason.String(o.reason))
		}
		if failed {
			recordFailure(span, r, cause, o.err)
			span.SetStatus(codes.Error, failure(outcome, ack, res))
		}
	}
	span.End()
}

// recordFailure adds the exception event of a failed attempt: its panic
// (with the stack), its error, the cause that stopped it, or else what
// its event gives (completion effects that could not apply, a rejected
// or failed ack).
func recordFailure(span trace.Span, r result, cause, failed error) {
	switch {
	case r.panic != nil:
		span.RecordError(fmt.Errorf("panic: %v", r.panic),
			trace.WithAttributes(attribute.String("exception.stacktrace", string(r.stack))))
	case r.err != nil:
		span.RecordError(r.err)
	case cause != nil:
		if !errors.Is(cause, ErrLeaseLost) {
			span.RecordError(cause)
		}
	case failed != nil:
		span.RecordError(failed)
	}
}

// failure is a failed attempt's span status.
func failure(outcome string, ack store.Ack, res store.AckResult) string {
	switch {
	case outcome == "lease_lost":
		return ErrLeaseLost.Error()
	case res.Err != nil:
		return "outcome rejected: " + res.Err.Error()
	case ack.Message != "":
		return ack.Message
	}
	return fmt.Sprintf("%s (job now %s)", outcome, res.State)
}

func terminal(state string) bool {
	switch state {
	case "completed", "archived", "quarantined", "cancelled":
		return true
	}
	return false
}

// reaped counts a job this worker's reaper reclaimed from an expired
// lease: a crash (its kind is not read), and a quarantine at the limit.
// A job it archived ('malformed': its crash counter, hash or state
// corrupt) was charged no crash and counts nothing.
func (t *workerTelemetry) reaped(queue, state string) {
	ctx := context.Background()
	if state == "archived" || !t.crashed.Enabled(ctx) {
		return
	}
	q := metric.WithAttributes(telemetry.Queue.String(queue))
	t.crashed.Add(ctx, 1, q)
	if state == "quarantined" {
		t.quarantined.Add(ctx, 1, q)
	}
}

// deadEffect counts an effect of queue p dead-lettered by this worker's
// relay.
func (t *workerTelemetry) deadEffect(ctx context.Context, p keys.Partition) {
	t.deadEffects.Add(ctx, 1, metric.WithAttributes(telemetry.Queue.String(p.Queue)))
}

// depthStates are the states the depth gauge reports, 0 included.
var depthStates = []string{"scheduled", "available", "running", "retryable", "completed", "archived", "quarantined", "cancelled"}

// watchDepth reports the depth of the worker's queues while it runs: the
// callback reads the partitions' counters, in one round trip, only when a
// reader collects. It returns the function that stops it.
func (t *workerTelemetry) watchDepth() (stop func()) {
	reg, err := t.meter.RegisterCallback(t.observeDepth, t.depth)
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	return func() { handle(reg.Unregister()) }
}

func (t *workerTelemetry) observeDepth(ctx context.Context, o metric.Observer) error {
	counts, err := t.st.StateCounts(ctx, t.parts)
	if err != nil {
		return fmt.Errorf("sluice: reading queue depth: %w", err)
	}
	byQueue := map[string]map[string]int64{}
	for i, m := range counts {
		q := t.parts[i].Queue
		if byQueue[q] == nil {
			byQueue[q] = map[string]int64{}
		}
		for state, n := range m {
			byQueue[q][state] += n
		}
	}
	for q, m := range byQueue {
		for _, state := range depthStates {
			o.ObserveInt64(t.depth, m[state], metric.WithAttributes(telemetry.Queue.String(q), telemetry.State.String(state)))
		}
	}
	return nil
}
