package telemetry

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"
)

var sc = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID: trace.TraceID{0xa}, SpanID: trace.SpanID{0xb}, TraceFlags: trace.FlagsSampled,
})

const parent = "00-0a000000000000000000000000000000-0b00000000000000-01"

func TestInject(t *testing.T) {
	t.Parallel()
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	tests := []struct {
		name string
		ctx  context.Context
		h    map[string]string
		want map[string]string
	}{
		{"no span context, no headers", context.Background(), nil, nil},
		{"no span context", context.Background(), map[string]string{"tenant": "a"}, map[string]string{"tenant": "a"}},
		{"added", traced, nil, map[string]string{"traceparent": parent}},
		{"beside the caller's", traced, map[string]string{"tenant": "a"}, map[string]string{"tenant": "a", "traceparent": parent}},
		{"the caller's traceparent wins", traced, map[string]string{"traceparent": "mine"}, map[string]string{"traceparent": "mine"}},
		{"the caller's tracestate is kept", traced, map[string]string{"tracestate": "k=v"}, map[string]string{"tracestate": "k=v", "traceparent": parent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var before map[string]string
			if tt.h != nil {
				before = map[string]string{}
				for k, v := range tt.h {
					before[k] = v
				}
			}
			got := Inject(tt.ctx, tt.h)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("headers (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tt.h); d != "" {
				t.Errorf("the caller's map changed (-before +after):\n%s", d)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	t.Parallel()
	h := Inject(trace.ContextWithSpanContext(context.Background(), sc), map[string]string{"tenant": "a"})
	got := trace.SpanContextFromContext(Extract(context.Background(), h))
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsRemote() || !got.IsSampled() {
		t.Errorf("extracted %v, want %v remote", got, sc)
	}
	if Extract(context.Background(), nil) != context.Background() {
		t.Errorf("no headers changed the context")
	}
}

// TestInjectFree: without a span context, Inject costs no allocation.
func TestInjectFree(t *testing.T) {
	h := map[string]string{"tenant": "a"}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = Inject(ctx, h) }); n != 0 {
		t.Errorf("Inject allocates %v times without a span context", n)
	}
}
