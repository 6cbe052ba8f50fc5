package flow

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/telemetry"
)

// clientTelemetry instruments a Client: a producer span per enqueued job
// and a counter of the jobs added. Without an OpenTelemetry SDK installed
// (or providers given in ClientOptions) both are no-ops.
type clientTelemetry struct {
	tracer   trace.Tracer
	enqueued metric.Int64Counter
}

func newClientTelemetry(o ClientOptions) *clientTelemetry {
	enqueued, err := telemetry.Meter(o.MeterProvider).Int64Counter("sluice.jobs.enqueued",
		metric.WithUnit("{job}"),
		metric.WithDescription("Jobs added by enqueues; duplicates are not counted."))
	if err != nil {
		otel.Handle(err) // the instrument returned is still usable
	}
	return &clientTelemetry{tracer: telemetry.Tracer(o.TracerProvider), enqueued: enqueued}
}

var producer = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}

// enqueueTrace follows one EnqueueMany call: one producer span per item,
// named "sluice.enqueue <kind>", whose context the item's headers carry to
// the job's attempts.
type enqueueTrace struct {
	t     *clientTelemetry
	ctx   context.Context
	items []Item
	spans []enqueueSpan
	// inert is the first item's span when it neither records nor carries
	// a trace context (no tracer provider, no trace in ctx) and ctx holds
	// no baggage: every other item's would be the same, so they share it,
	// and no headers are written (Inject would write none). Most producers
	// run so, and a span costs four allocations.
	inert trace.Span
}

type enqueueSpan struct {
	span  trace.Span
	queue string
}

func (t *clientTelemetry) begin(ctx context.Context, items []Item) *enqueueTrace {
	return &enqueueTrace{t: t, ctx: ctx, items: items, spans: make([]enqueueSpan, len(items))}
}

// start starts item i's span and returns the option that puts the span's
// trace context into the item's headers (nil when there is none to put);
// it runs after the item's own options, so it sees the caller's headers.
func (et *enqueueTrace) start(i int) EnqueueOption {
	s := &et.spans[i]
	if et.inert != nil {
		s.span = et.inert
		return nil
	}
	ctx, span := et.t.tracer.Start(et.ctx, "sluice.enqueue", producer...)
	s.span = span
	if !span.IsRecording() && !span.SpanContext().IsValid() && baggage.FromContext(ctx).Len() == 0 {
		et.inert = span
		return nil
	}
	return func(o *enqueueOptions) error {
		s.queue = o.queue // for the span of an item whose draft then fails
		o.headers = telemetry.Inject(ctx, o.headers)
		return nil
	}
}

// placed records the queue item i goes to, once drafted.
func (et *enqueueTrace) placed(i int, queue string) { et.spans[i].queue = queue }

// end ends the spans started, each with its job's ID and whether it was
// added (out), or with err when the call failed as a whole, and counts the
// jobs added.
func (et *enqueueTrace) end(out []Enqueued, err error) {
	count := err == nil && et.t.enqueued.Enabled(et.ctx)
	for i, s := range et.spans {
		if s.span == nil { // planning stopped before item i
			break
		}
		kind := kindOfArgs(et.items[i].Args)
		var e Enqueued
		if out != nil {
			e = out[i]
		}
		failed := err
		if failed == nil {
			failed = e.Err
		}
		if count && failed == nil && !e.Duplicate {
			et.t.enqueued.Add(et.ctx, 1, metric.WithAttributes(telemetry.Queue.String(s.queue), telemetry.Kind.String(kind)))
		}
		if s.span.IsRecording() {
			s.span.SetName("sluice.enqueue " + kind)
			s.span.SetAttributes(telemetry.Queue.String(s.queue), telemetry.Kind.String(kind))
			if failed != nil {
				s.span.RecordError(failed)
				s.span.SetStatus(codes.Error, failed.Error())
			} else {
				s.span.SetAttributes(telemetry.JobID.String(e.ID), telemetry.Duplicate.Bool(e.Duplicate))
			}
		}
		s.span.End()
	}
}

// traceHeaders puts ctx's trace context into the job's headers: for jobs
// enqueued from a running job (spawned children, follow-ups), whose
// attempts become children of the step that enqueued them.
func traceHeaders(ctx context.Context) EnqueueOption {
	return func(o *enqueueOptions) error {
		o.headers = telemetry.Inject(ctx, o.headers)
		return nil
	}
}
