package step_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/step"
)

type completeInStep struct{ N int }

func (completeInStep) Kind() string { return "complete_in_step" }

// TestOnCompleteInsideStepRefused: OnComplete belongs at handler level.
// Inside a step function it stages nothing and returns
// ErrOnCompleteInStep, and the step fails with it (nothing checkpointed)
// even when the function ignores that error: the effects would otherwise
// live only in the attempt's memory, and be lost once the step is
// checkpointed and a later attempt completes the job. Called after the
// steps, at handler level, it applies with the completion.
func TestOnCompleteInsideStepRefused(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var done string
	var mu sync.Mutex
	var returned, ignored error
	register(t, reg, func(ctx context.Context, job *flow.Job[completeInStep]) error {
		errA := step.Do(ctx, "returned", func(ctx context.Context) error {
			return step.OnComplete(ctx, idempotency.IncrBy(done, 100))
		})
		errB := step.Do(ctx, "ignored", func(ctx context.Context) error {
			_ = step.OnComplete(ctx, idempotency.IncrBy(done, 100))
			return nil
		})
		mu.Lock()
		returned, ignored = errA, errB
		mu.Unlock()
		return step.OnComplete(ctx, idempotency.IncrBy(done, 1))
	})
	e := newEnv(t, shared.Server.Client(), reg)
	done = "{" + e.NS + ":default:0}:u:done" // in the job's slot: applied with the completion
	info := e.run(completeInStep{N: 1}, flow.StateCompleted)
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(returned, step.ErrOnCompleteInStep) || !errors.Is(ignored, step.ErrOnCompleteInStep) {
		t.Fatalf("steps: %v, %v; want ErrOnCompleteInStep from both", returned, ignored)
	}
	if len(info.Steps) != 0 {
		t.Errorf("checkpointed steps %+v, want none", info.Steps)
	}
	if got, err := e.RDB.Get(context.Background(), done).Result(); got != "1" {
		t.Fatalf("completion effects: %q (%v), want 1: only the handler-level OnComplete's", got, err)
	}
}

type completeInStepReturned struct{}

func (completeInStepReturned) Kind() string { return "complete_in_step_returned" }

// TestOnCompleteInsideStepParks: a handler that returns the step's
// ErrOnCompleteInStep parks its job at once (archived, reason
// on_complete_in_step): the mistake is in its code, and each retry would
// make it again.
func TestOnCompleteInsideStepParks(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	register(t, reg, func(ctx context.Context, _ *flow.Job[completeInStepReturned]) error {
		return step.Do(ctx, "charge", func(ctx context.Context) error {
			return step.OnComplete(ctx, idempotency.IncrBy("{x}:n", 1))
		})
	})
	e := newEnv(t, shared.Server.Client(), reg)
	info := e.run(completeInStepReturned{}, flow.StateArchived)
	if info.Reason != "on_complete_in_step" || info.Attempt != 0 {
		t.Errorf("job: %s, reason %q, attempt %d; want archived on_complete_in_step at its first attempt", info.State, info.Reason, info.Attempt)
	}
}
