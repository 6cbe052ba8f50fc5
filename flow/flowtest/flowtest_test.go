package flowtest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

type order struct{ Cents int }

func (order) Kind() string { return "order" }

func registry(t *testing.T, runs map[string]*atomic.Int64) *flow.Registry {
	reg := flow.NewRegistry()
	for _, s := range []string{"authorize", "charge", "ship"} {
		runs[s] = &atomic.Int64{}
	}
	err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[order]) (string, error) {
		auth, err := step.Run(ctx, "authorize", func(context.Context) (string, error) {
			runs["authorize"].Add(1)
			return "auth-1", nil
		})
		if err != nil {
			return "", err
		}
		if _, err := step.Run(ctx, "charge", func(context.Context) (int, error) {
			runs["charge"].Add(1)
			return job.Args.Cents, nil
		}); err != nil {
			return "", err
		}
		if job.Args.Cents < 0 {
			return "", errors.New("negative order")
		}
		err = step.Do(ctx, "ship", func(context.Context) error { runs["ship"].Add(1); return nil })
		return "shipped with " + auth, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestCrashAfterStep: an injected crash after step 2 is charged as a crash
// and the next attempt resumes after the checkpointed steps.
func TestCrashAfterStep(t *testing.T) {
	runs := map[string]*atomic.Int64{}
	h := flowtest.New(t, registry(t, runs))
	res := h.Run(order{Cents: 500}, flowtest.CrashAfterStep(2))
	if res.Job.State != flow.StateCompleted || res.Job.CrashAttempt != 1 || res.Job.Attempt != 0 || res.Attempts != 2 {
		t.Fatalf("job %+v after %d attempts", res.Job, res.Attempts)
	}
	if runs["authorize"].Load() != 1 || runs["charge"].Load() != 1 || runs["ship"].Load() != 1 {
		t.Fatalf("steps ran %d/%d/%d times, want once each", runs["authorize"].Load(), runs["charge"].Load(), runs["ship"].Load())
	}
	var charged int
	if err := res.Job.DecodeStep("charge", &charged); err != nil || charged != 500 {
		t.Fatalf("charge checkpoint %d, %v", charged, err)
	}
	if len(res.Job.Steps) != 3 || res.Job.Steps[2].Name != "ship" {
		t.Fatalf("steps %+v", res.Job.Steps)
	}
}

// TestRetryWaitsOnTheClock: a job that fails waits for its backoff on the
// harness's fake clock.
func TestRetryWaitsOnTheClock(t *testing.T) {
	runs := map[string]*atomic.Int64{}
	h := flowtest.New(t, registry(t, runs), runtimeOptions())
	res := h.Run(order{Cents: -1}, flowtest.WithEnqueueOptions(flow.WithMaxAttempts(2)))
	if res.Job.State != flow.StateRetryable || res.Job.Attempt != 1 {
		t.Fatalf("after the first failure: %+v", res.Job)
	}
	h.Clock.Advance(time.Minute)
	res = h.Resume(res.Job.ID, 10*time.Second)
	if res.Job.State != flow.StateArchived || res.Job.Reason != "attempts_exhausted" || runs["charge"].Load() != 1 {
		t.Fatalf("after the second failure: %+v, charge ran %d times", res.Job, runs["charge"].Load())
	}
}

func runtimeOptions() runtime.Options {
	return runtime.Options{Backoff: func(int) time.Duration { return 30 * time.Second }}
}

type square struct{ N int }

func (square) Kind() string { return "square" }

type sum struct{ Upto int }

func (sum) Kind() string { return "sum" }

type price struct{ N int }

func (price) Kind() string { return "price" }

// TestJoinAcrossQueues: Run works a parent whose children run in another
// queue until the parent has joined them and completed, without the join
// recheck's clock moving; Call does the same for one child.
func TestJoinAcrossQueues(t *testing.T) {
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[square]) (int, error) {
		return job.Args.N * job.Args.N, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[sum]) (int, error) {
		var items []flow.Item
		for i := 1; i <= job.Args.Upto; i++ {
			items = append(items, flow.Item{Args: square{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("math")}})
		}
		kids, err := flow.Spawn(ctx, "squares", items...)
		if err != nil {
			return 0, err
		}
		res, err := flow.Join[int](ctx, kids, flow.FailFast)
		if err != nil {
			return 0, err
		}
		total := 0
		for _, r := range res {
			total += r.Result
		}
		return total, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[price]) (int, error) {
		sq, err := flow.Call[int](ctx, "square", square{N: job.Args.N}, flow.WithQueue("math"))
		if err != nil {
			return 0, err
		}
		return sq + 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	start := h.Clock.Now()
	res := h.Run(sum{Upto: 4})
	var total int
	if res.Job.State != flow.StateCompleted || res.Job.DecodeResult(&total) != nil || total != 30 {
		t.Fatalf("parent: %s, total %d (%s)", res.Job.State, total, res.Job.LastError)
	}
	res = h.Run(price{N: 7})
	var p int
	if res.Job.State != flow.StateCompleted || res.Job.DecodeResult(&p) != nil || p != 50 {
		t.Fatalf("caller: %s, price %d (%s)", res.Job.State, p, res.Job.LastError)
	}
	if !h.Clock.Now().Equal(start) {
		t.Fatal("the clock moved")
	}
}
