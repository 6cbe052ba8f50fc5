package step

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/telemetry"
)

// startStep starts the span "sluice.step <name>", a child of the span in
// ctx (the attempt's, or the handler's own inside it), from that span's
// tracer provider. When that span is not recording (no SDK, or not
// sampled) it starts nothing and returns a nil span: a step costs no
// telemetry unless its attempt is traced.
func startStep(ctx context.Context, st *attempt.State, name string, idx int, cached bool) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	ctx, span := parent.TracerProvider().Tracer(telemetry.Scope).Start(ctx, "sluice.step "+name)
	if span.IsRecording() {
		span.SetAttributes(telemetry.Step.String(name), telemetry.StepIndex.Int(idx),
			telemetry.StepCached.Bool(cached), telemetry.JobID.String(st.Ref.String()))
	}
	return ctx, span
}

// endStep ends a step's span: an error status when the step failed, or
// when it did not return (a panic, runtime.Goexit).
func endStep(span trace.Span, err error, returned bool) {
	if span == nil {
		return
	}
	switch {
	case !returned:
		span.SetStatus(codes.Error, "step did not return (panic)")
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
