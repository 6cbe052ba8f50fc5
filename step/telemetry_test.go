package step

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/internal/attempt"
)

// TestStepSpanFree: when the attempt's span does not record (no SDK), a
// step makes no span and allocates nothing for telemetry.
func TestStepSpanFree(t *testing.T) {
	st := &attempt.State{}
	for name, ctx := range map[string]context.Context{
		"no span":   context.Background(),
		"no-op SDK": trace.ContextWithSpan(context.Background(), noop.Span{}),
	} {
		n := testing.AllocsPerRun(100, func() {
			_, span := startStep(ctx, st, "charge", 0, false)
			endStep(span, nil, true)
			if span != nil {
				t.Fatalf("%s: a span was made", name)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations", name, n)
		}
	}
}
