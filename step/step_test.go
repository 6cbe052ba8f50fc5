package step_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/step"
)

type workflow struct{ Variant string }

func (workflow) Kind() string { return "workflow" }

// counter counts calls by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// TestStepsRunOnce: after a failed attempt, completed steps return their
// checkpointed results without running again.
func TestStepsRunOnce(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var calls counter
	var keys sync.Map
	register(t, reg, func(ctx context.Context, job *flow.Job[workflow]) error {
		a, err := step.Run(ctx, "a", func(ctx context.Context) (int, error) { calls.add("a"); return 41, nil })
		if err != nil {
			return err
		}
		keys.Store(job.Attempt, idempotency.Key(ctx, "b"))
		b, err := step.Run(ctx, "b", func(ctx context.Context) (string, error) { calls.add("b"); return "x", nil })
		if err != nil {
			return err
		}
		if job.Attempt == 0 {
			return errors.New("fail after two steps")
		}
		return step.Do(ctx, "c", func(ctx context.Context) error {
			calls.add("c")
			if a != 41 || b != "x" {
				return errors.New("cached results differ")
			}
			return nil
		})
	})
	e := newEnv(t, shared.Server.Client(), reg)
	info := e.run(workflow{}, flow.StateCompleted)
	if info.Attempt != 1 || calls.get("a") != 1 || calls.get("b") != 1 || calls.get("c") != 1 {
		t.Fatalf("attempt %d, calls %v", info.Attempt, calls.n)
	}
	k0, _ := keys.Load(0)
	k1, _ := keys.Load(1)
	if k0 == "" || k0 != k1 || !strings.Contains(k0.(string), ":b") {
		t.Fatalf("idempotency keys differ across attempts: %v %v", k0, k1)
	}
}

type badSteps struct{ Case string }

func (badSteps) Kind() string { return "bad_steps" }

// TestStepErrorsPark: bugs in a handler's steps park the job with a typed
// reason instead of corrupting or retrying forever.
func TestStepErrorsPark(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var seen sync.Map
	register(t, reg, func(ctx context.Context, job *flow.Job[badSteps]) error {
		var err error
		switch job.Args.Case {
		case "duplicate":
			_ = step.Do(ctx, "same", func(context.Context) error { return nil })
			err = step.Do(ctx, "same", func(context.Context) error { return nil })
			seen.Store(job.Args.Case, errors.Is(err, step.ErrDuplicateStep))
		case "sequence":
			first, second := "one", "two"
			if job.Attempt > 0 { // a new deploy swapped the steps
				first, second = second, first
			}
			if err = step.Do(ctx, first, func(context.Context) error { return nil }); err == nil {
				if err = step.Do(ctx, second, func(context.Context) error { return nil }); err == nil && job.Attempt == 0 {
					return errors.New("retry me")
				}
			}
			if job.Attempt > 0 {
				seen.Store(job.Args.Case, errors.Is(err, step.ErrStaleCheckpoint))
			}
		case "oversized":
			_, err = step.Run(ctx, "big", func(context.Context) (string, error) { return strings.Repeat("x", step.MaxResult+1), nil })
			seen.Store(job.Args.Case, errors.Is(err, step.ErrResult))
		case "oversized cursor":
			cur, cerr := step.NewCursor[string](ctx, "rows", 1)
			if err = cerr; err == nil {
				err = cur.Advance(ctx, strings.Repeat("x", step.MaxResult+1))
			}
			seen.Store(job.Args.Case, errors.Is(err, step.ErrResult))
		case "unencodable":
			_, err = step.Run(ctx, "chan", func(context.Context) (chan int, error) { return make(chan int), nil })
			seen.Store(job.Args.Case, errors.Is(err, step.ErrResult))
		case "name":
			err = step.Do(ctx, "has space", func(context.Context) error { return nil })
			seen.Store(job.Args.Case, errors.Is(err, step.ErrInvalidName))
		}
		return err
	})
	e := newEnv(t, shared.Server.Client(), reg)
	for c, reason := range map[string]string{
		"duplicate": "duplicate_step", "sequence": "stale_checkpoint", "oversized": "step_result", "oversized cursor": "step_result",
		"unencodable": "step_result", "name": "invalid_step",
	} {
		info := e.run(badSteps{Case: c}, flow.StateArchived)
		if info.Reason != reason {
			t.Errorf("%s: reason %q, want %q", c, info.Reason, reason)
		}
		if ok, _ := seen.Load(c); ok != true {
			t.Errorf("%s: the handler did not see the typed error", c)
		}
	}
}

// TestOutsideAJob: step functions outside a handler fail clearly.
func TestOutsideAJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if err := step.Do(ctx, "x", func(context.Context) error { return nil }); !errors.Is(err, step.ErrNoAttempt) {
		t.Fatalf("Do: %v", err)
	}
	if err := step.Effect(ctx); !errors.Is(err, step.ErrNoAttempt) {
		t.Fatalf("Effect: %v", err)
	}
	if _, err := step.NewCursor[int](ctx, "c", 1); !errors.Is(err, step.ErrNoAttempt) {
		t.Fatalf("NewCursor: %v", err)
	}
	if idempotency.Key(ctx, "s") != "" || idempotency.SlotKey(ctx, "s") != "" {
		t.Fatal("keys outside a job")
	}
}
