// Package telemetry is what Sluice's OpenTelemetry instrumentation shares
// across packages: the instrumentation scope, the attribute keys, the
// providers' defaults and the propagation of trace context through job
// headers. It depends on the OpenTelemetry API only; without an SDK
// installed every call is a no-op.
package telemetry

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of every tracer and meter.
const Scope = "github.com/sluicehq/sluice"

// Attribute keys of spans and metrics.
const (
	JobID        = attribute.Key("sluice.job.id")
	Queue        = attribute.Key("sluice.queue")
	Kind         = attribute.Key("sluice.job.kind")
	Attempt      = attribute.Key("sluice.attempt")       // returned errors before this attempt
	CrashAttempt = attribute.Key("sluice.crash_attempt") // crashes before this attempt
	Fence        = attribute.Key("sluice.fence")
	Priority     = attribute.Key("sluice.priority")
	Worker       = attribute.Key("sluice.worker.id")
	Outcome      = attribute.Key("sluice.outcome")   // ok, retry, crash, ... lease_lost, rejected
	State        = attribute.Key("sluice.job.state") // the job's state after the span's operation
	Reason       = attribute.Key("sluice.reason")    // an attempt's Event.Reason: error class, archive reason, ...
	Duplicate    = attribute.Key("sluice.duplicate") // enqueue added nothing
	First        = attribute.Key("sluice.attempt.first")
	Step         = attribute.Key("sluice.step")
	StepIndex    = attribute.Key("sluice.step.index")
	StepCached   = attribute.Key("sluice.step.cached") // replayed from its checkpoint
)

// Tracer is tp's tracer for Sluice; a nil tp is the global provider.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(Scope)
}

// Meter is mp's meter for Sluice; a nil mp is the global provider.
func Meter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(Scope)
}

// Propagator is the global propagator when one is installed
// (otel.SetTextMapPropagator), else W3C trace context.
func Propagator() propagation.TextMapPropagator {
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return propagation.TraceContext{}
}

// TraceParent is the W3C trace context header.
const TraceParent = "traceparent"

// Inject returns the job headers h with ctx's trace context added. A
// header the caller set is never overwritten, and a caller's own
// traceparent keeps the trace context out entirely. h is not modified: it
// is returned as is when nothing is added (always when ctx carries neither
// a span context nor baggage), else a copy is.
func Inject(ctx context.Context, h map[string]string) map[string]string {
	if _, own := h[TraceParent]; own {
		return h
	}
	if !trace.SpanContextFromContext(ctx).IsValid() && baggage.FromContext(ctx).Len() == 0 {
		return h
	}
	c := &carrier{base: h}
	Propagator().Inject(ctx, c)
	if c.out == nil {
		return h
	}
	return c.out
}

// Extract returns ctx with the trace context (and baggage) of job headers h.
func Extract(ctx context.Context, h map[string]string) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return Propagator().Extract(ctx, propagation.MapCarrier(h))
}

// carrier writes into a copy of base, made on the first write, and never
// over a key base has.
type carrier struct {
	base, out map[string]string
}

func (c *carrier) Get(k string) string {
	if v, ok := c.out[k]; ok {
		return v
	}
	return c.base[k]
}

func (c *carrier) Set(k, v string) {
	if _, own := c.base[k]; own {
		return
	}
	if c.out == nil {
		c.out = make(map[string]string, len(c.base)+2)
		maps.Copy(c.out, c.base)
	}
	c.out[k] = v
}

func (c *carrier) Keys() []string {
	m := c.out
	if m == nil {
		m = c.base
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
