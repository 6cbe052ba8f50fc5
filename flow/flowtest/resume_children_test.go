package flowtest_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/step"
)

type napper struct{ N int }

func (napper) Kind() string { return "napper" }

type napParent struct{ N int }

func (napParent) Kind() string { return "nap_parent" }

// TestResumeRunsAChildWhoseTimerIsDue: a parent waits on a child that
// sleeps a minute; once the test advances the clock by that minute, Resume
// of the parent runs the child's due timer and then the parent, rather
// than return the parent still waiting (the child's due timer is work
// left to run now).
func TestResumeRunsAChildWhoseTimerIsDue(t *testing.T) {
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[napper]) (int, error) {
		if err := step.Sleep(ctx, "nap", time.Minute); err != nil {
			return 0, err
		}
		return job.Args.N * 2, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[napParent]) (int, error) {
		return flow.Call[int](ctx, "nap", napper{N: job.Args.N})
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	res := h.Run(napParent{N: 21})
	if res.Job.State != flow.StateScheduled || res.Job.WaitingFor == "" {
		t.Fatalf("before the nap is over: parent %s (waiting for %q)", res.Job.State, res.Job.WaitingFor)
	}
	h.Clock.Advance(time.Minute) // less than flow.JoinRecheck: the parent is not due itself
	res = h.Resume(res.Job.ID, 10*time.Second)
	var got int
	if res.Job.State != flow.StateCompleted || res.Job.DecodeResult(&got) != nil || got != 42 {
		t.Fatalf("after the nap: parent %s, result %d (%s)", res.Job.State, got, res.Job.LastError)
	}
}

type flaky struct{ N int }

func (flaky) Kind() string { return "flaky" }

type flakyParent struct{ N int }

func (flakyParent) Kind() string { return "flaky_parent" }

// TestRunRetriesAFailedChildBeforeReturning: with the harness's default
// Backoff (none), a child that fails once is retried at once; Run of its
// parent returns the parent completed, not waiting while its child's
// retry is due.
func TestRunRetriesAFailedChildBeforeReturning(t *testing.T) {
	var calls atomic.Int64
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[flaky]) (int, error) {
		if calls.Add(1) == 1 {
			return 0, errors.New("first call fails")
		}
		return job.Args.N + 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[flakyParent]) (int, error) {
		return flow.Call[int](ctx, "flaky", flaky{N: job.Args.N})
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	for i := 0; i < 20; i++ {
		calls.Store(0)
		res := h.Run(flakyParent{N: i})
		var got int
		if res.Job.State != flow.StateCompleted || res.Job.DecodeResult(&got) != nil || got != i+1 {
			t.Fatalf("run %d: parent %s, result %d (%s), child called %d times", i, res.Job.State, got, res.Job.LastError, calls.Load())
		}
	}
}
