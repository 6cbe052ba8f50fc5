package runtime_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// TestCompletionEffectsFailingOnLastAttemptCountsAFailure: a handler
// returns nil on its job's last attempt, but the completion's effects
// cannot apply (INCRBY on a list), so the ack archives the job
// (attempts_exhausted). The attempt failed: it is counted in
// sluice.jobs.failed, its span has an error status, an exception event and
// the reason its event gives, as an effect failure with attempts left is
// counted.
func TestCompletionEffectsFailingOnLastAttemptCountsAFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	bad := e.partition().Tag() + ":u:list"
	testkit.Must(t, e.RDB.RPush(context.Background(), bad, "x").Err())
	reader := sdkmetric.NewManualReader()
	rec := tracetest.NewSpanRecorder()
	events := testkit.Chan[runtime.Event]()
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		return step.OnComplete(ctx, idempotency.IncrBy(bad, 1))
	})
	e.startWorker(reg, runtime.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		OnEvent: func(_ context.Context, ev runtime.Event) {
			if ev.Type != runtime.EventStarted {
				events <- ev
			}
		}})
	id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(1))
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id }); s.State != flow.StateArchived {
		t.Fatalf("settled %+v, want archived", s)
	}
	ev := testkit.Recv(t, events, "the outcome's event")
	if ev.Type != runtime.EventFailed || ev.Reason != "attempts_exhausted" {
		t.Errorf("event %s, reason %s: want failed, attempts_exhausted", ev.Type, ev.Reason)
	}
	const job = "{sluice.job.kind=obs,sluice.queue=default}"
	checkMetrics(t, metrics(t, reader), map[string]float64{
		"sluice.jobs.processed{sluice.job.kind=obs,sluice.outcome=ok,sluice.queue=default}": 1,
		"sluice.jobs.failed" + job: 1,
	}, "sluice.jobs.")
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	attrs := spanAttrs(spans[0])
	if s := spans[0].Status(); s.Code != codes.Error || attrs["sluice.reason"] != ev.Reason || attrs["sluice.job.state"] != flow.StateArchived {
		t.Errorf("span status %+v, reason %q, state %q: want an error, %q (its event's), archived",
			s, attrs["sluice.reason"], attrs["sluice.job.state"], ev.Reason)
	}
	if evs := spans[0].Events(); len(evs) != 1 || evs[0].Name != "exception" {
		t.Errorf("span events %+v, want one exception: why the attempt failed", evs)
	}
}

// spanAttrs is a span's attributes as strings, by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	attrs := map[string]string{}
	for _, kv := range s.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	return attrs
}

// TestQuarantineSpanReasonIsItsEvents: a panic at the crash limit
// quarantines its job; the attempt's span gives the reason its event and
// record give (crash_limit), not the crash's (panic).
func TestQuarantineSpanReasonIsItsEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := tracetest.NewSpanRecorder()
	events := testkit.Chan[runtime.Event]()
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error { panic("boom") })
	e.startWorker(reg, runtime.Options{CrashLimit: 1,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		OnEvent: func(_ context.Context, ev runtime.Event) {
			if ev.Type != runtime.EventStarted {
				events <- ev
			}
		}})
	id := e.Enqueue(obsArgs{})
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id }); s.State != flow.StateQuarantined {
		t.Fatalf("settled %+v, want quarantined", s)
	}
	ev := testkit.Recv(t, events, "the outcome's event")
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	if got := spanAttrs(spans[0])["sluice.reason"]; ev.Reason != "crash_limit" || got != ev.Reason {
		t.Errorf("span reason %q, event reason %q: want crash_limit for both", got, ev.Reason)
	}
}
