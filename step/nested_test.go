package step_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/step"
)

type nestedStep struct{}

func (nestedStep) Kind() string { return "nested_step" }

// TestNestedStepIsRefused: a step begun inside another step's function
// takes a position in the sequence only on the attempts that run the
// outer function; once the outer step is checkpointed, a later attempt
// replays it without its inner step, and the next step lands on the
// inner step's position. Before, the job ran, slept, and was parked with
// stale_checkpoint on resume under unchanged code.
func TestNestedStepIsRefused(t *testing.T) {
	reg := flow.NewRegistry()
	var inner error
	register(t, reg, func(ctx context.Context, _ *flow.Job[nestedStep]) error {
		if err := step.Do(ctx, "outer", func(ctx context.Context) error {
			inner = step.Do(ctx, "inner", func(context.Context) error { return nil })
			return inner
		}); err != nil {
			return err
		}
		return step.Sleep(ctx, "nap", time.Minute)
	})
	h := flowtest.New(t, reg)
	j := h.Run(nestedStep{}).Job
	if j.State == flow.StateArchived {
		if j.Reason != "step_in_step" || !errors.Is(inner, step.ErrStepInStep) || len(j.Steps) != 0 {
			t.Fatalf("archived %s (%s), inner step's error %v, %d steps; want step_in_step, nothing checkpointed", j.Reason, j.LastError, inner, len(j.Steps))
		}
		return
	}
	h.Clock.Advance(time.Minute)
	j = h.Resume(j.ID, 10*time.Second).Job
	t.Fatalf("a nested step was taken: after the sleep, %s %s (%s)", j.State, j.Reason, j.LastError)
}
