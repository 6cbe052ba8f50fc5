package flowtest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
)

type leaf struct{ N int }

func (leaf) Kind() string { return "leaf" }

type fanParent struct{ N int }

func (fanParent) Kind() string { return "fan_parent" }

// TestAttemptsCountsTheJobsOwnCalls: Result.Attempts is how many times
// the job's handler was called, not how many handler calls the Run made
// in all: a parent that spawns three children and joins them is called
// once or twice (a second time when its children were not done at its
// first Join), whatever its children's calls.
func TestAttemptsCountsTheJobsOwnCalls(t *testing.T) {
	var parentCalls atomic.Int64
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[leaf]) (int, error) {
		return job.Args.N, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[fanParent]) (int, error) {
		parentCalls.Add(1)
		var items []flow.Item
		for i := 0; i < job.Args.N; i++ {
			items = append(items, flow.Item{Args: leaf{N: i}})
		}
		kids, err := flow.Spawn(ctx, "leaves", items...)
		if err != nil {
			return 0, err
		}
		res, err := flow.Join[int](ctx, kids, flow.FailFast)
		if err != nil {
			return 0, err
		}
		return len(res), nil
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	res := h.Run(fanParent{N: 3})
	if res.Job.State != flow.StateCompleted {
		t.Fatalf("parent %s (%s)", res.Job.State, res.Job.LastError)
	}
	if int64(res.Attempts) != parentCalls.Load() {
		t.Fatalf("Attempts %d, want %d: the parent's handler calls", res.Attempts, parentCalls.Load())
	}
}
