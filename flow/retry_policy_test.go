package flow_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
)

type flaky struct{ Hint time.Duration }

func (flaky) Kind() string { return "flaky" }

// busyError carries the delay an upstream asked for.
type busyError struct{ after time.Duration }

func (e *busyError) Error() string { return "upstream busy" }

// TestRetryPolicy: a kind's retry policy decides each retry's delay from
// the attempt and the error, instead of the worker's Backoff; a negative
// delay falls back to Backoff.
func TestRetryPolicy(t *testing.T) {
	reg := flow.NewRegistry()
	var mu sync.Mutex
	var seen []int
	err := flow.Register(reg, func(ctx context.Context, job *flow.Job[flaky]) error {
		return &busyError{after: job.Args.Hint}
	}, flow.WithRetryPolicy(func(attempt int, err error) time.Duration {
		mu.Lock()
		seen = append(seen, attempt)
		mu.Unlock()
		var busy *busyError
		if !errors.As(err, &busy) {
			t.Errorf("the policy got %v, want the handler's error", err)
		}
		return busy.after * time.Duration(attempt)
	}))
	if err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	start := h.Clock.Now()
	j := h.Run(flaky{Hint: 5 * time.Minute}, flowtest.WithEnqueueOptions(flow.WithMaxAttempts(3))).Job
	if j.State != flow.StateRetryable || !j.RunAt.Equal(start.Add(5*time.Minute)) {
		t.Fatalf("after the first failure: %s due %v, want retryable at +5m", j.State, j.RunAt.Sub(start))
	}
	h.Clock.Advance(5 * time.Minute)
	j = h.Resume(j.ID, 10*time.Second).Job
	if j.State != flow.StateRetryable || !j.RunAt.Equal(start.Add(15*time.Minute)) {
		t.Fatalf("after the second failure: %s due %v, want retryable at +15m", j.State, j.RunAt.Sub(start))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("the policy saw attempts %v, want [1 2]", seen)
	}

	// negative: the worker's Backoff (flowtest's: none)
	reg2 := flow.NewRegistry()
	calls := 0
	if err := flow.Register(reg2, func(context.Context, *flow.Job[flaky]) error {
		calls++
		return errors.New("boom")
	}, flow.WithRetryPolicy(func(int, error) time.Duration { return -1 })); err != nil {
		t.Fatal(err)
	}
	h2 := flowtest.New(t, reg2)
	if j := h2.Run(flaky{}, flowtest.WithEnqueueOptions(flow.WithMaxAttempts(3))).Job; j.State != flow.StateArchived || calls != 3 {
		t.Fatalf("with a negative delay: %s after %d calls, want archived after 3 at once", j.State, calls)
	}
}
