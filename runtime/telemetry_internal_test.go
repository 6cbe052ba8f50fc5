package runtime

import (
	"context"
	"testing"
	"time"

	noopmetric "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// switchTracer is noop's tracer until on is set, then rec's; it counts
// the spans it was asked to start.
type switchTracer struct {
	noop.Tracer
	on     bool
	rec    trace.Tracer
	starts int
}

func (s *switchTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	s.starts++
	if s.on {
		return s.rec.Start(ctx, name, opts...)
	}
	return s.Tracer.Start(ctx, name, opts...)
}

// TestInertAttemptSpan: with a tracer that records nothing, attempts
// with no trace context share one inert span rather than each starting
// one, until inertFor has passed; then the tracer is asked again, and a
// tracer that records by then gets a span per attempt.
func TestInertAttemptSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := &switchTracer{rec: tp.Tracer("test")}
	tel := &workerTelemetry{tracer: tr, latency: noopmetric.Float64Histogram{}}
	attempt := func() *Attempt {
		a := &Attempt{Kind: "k"}
		tel.startAttempt(context.Background(), a, time.Now())
		return a
	}
	first, second := attempt(), attempt()
	if tr.starts != 1 || second.tel.span == nil || second.tel.span.IsRecording() {
		t.Fatalf("two attempts on an inert tracer: %d spans started, want 1 (the second shares it)", tr.starts)
	}
	tr.on = true
	if attempt(); tr.starts != 1 {
		t.Fatalf("within inertFor: %d spans started, want the inert one still shared", tr.starts)
	}
	tel.inert.Store(&inertSpan{span: first.tel.span, until: time.Since(monoStart) - time.Nanosecond}) // inertFor passed
	third, fourth := attempt(), attempt()
	if tr.starts != 3 || !third.tel.span.IsRecording() || !fourth.tel.span.IsRecording() {
		t.Fatalf("after inertFor, with a recording tracer: %d spans started (want 3), recording %v %v",
			tr.starts, third.tel.span.IsRecording(), fourth.tel.span.IsRecording())
	}
}
