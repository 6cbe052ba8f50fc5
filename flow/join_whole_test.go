package flow_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type wholeParent struct{ Gen int }

func (wholeParent) Kind() string { return "whole-parent" }

type wholeChild struct{ Gen, I int }

func (wholeChild) Kind() string { return "whole-child" }

// TestWholeJoinNotWokenByAnEarlierParentsChildren: a parent enqueued under
// its own ID spawns two children and joins all of them; an operator
// deletes it while they run and enqueues it again under that ID. When the
// first one's children finish, they are delivered to the parent's ID
// under the same step, and must not count for the new parent's join,
// which still waits for its own two. Before (a join of all of a step's
// children waited for the step's count), their count ended the wait while
// the join's own children ran, and the parent ran again on every ack (2,000
// times a second in the review that found it).
func TestWholeJoinNotWokenByAnEarlierParentsChildren(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	gates := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
	var runs atomic.Int64
	spawned := make(chan []string, 4)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[wholeChild]) error {
		select {
		case <-gates[job.Args.Gen]:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[wholeParent]) error {
		if job.Args.Gen == 2 {
			runs.Add(1)
		}
		g := job.Args.Gen
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: wholeChild{g, 0}}, flow.Item{Args: wholeChild{g, 1}})
		if err != nil {
			return err
		}
		if g == 1 {
			select {
			case spawned <- kids.IDs:
			default:
			}
		}
		_, err = flow.Join[struct{}](ctx, kids, flow.CollectAll)
		return err
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 8}, nil)
	open := map[int]bool{}
	release := func(g int) {
		if !open[g] {
			open[g] = true
			close(gates[g])
		}
	}
	t.Cleanup(func() { release(1); release(2) })
	ctx := context.Background()
	waiting := func(id string) {
		t.Helper()
		redistest.Within(t, testkit.Timeout, "the parent to wait for its two children", func() (bool, string) {
			j, err := c.Job(ctx, id)
			if err != nil {
				return false, err.Error()
			}
			return j.State == flow.StateScheduled && j.WaitingFor == "kids" && j.WaitingCount == 2,
				fmt.Sprintf("%s waiting for %q (%d)", j.State, j.WaitingFor, j.WaitingCount)
		})
	}
	e, err := c.Enqueue(ctx, wholeParent{Gen: 1}, flow.WithID("p"))
	testkit.Must(t, err)
	waiting(e.ID)
	first := testkit.Recv(t, spawned, "the first parent's children")
	testkit.Must(t, admin.New(c).DeleteJob(ctx, e.ID)) // its children go on running
	time.Sleep(2 * time.Millisecond)                   // another creation time: other child IDs
	e, err = c.Enqueue(ctx, wholeParent{Gen: 2}, flow.WithID("p"))
	testkit.Must(t, err)
	waiting(e.ID)
	state := func(id, want string) {
		t.Helper()
		redistest.Within(t, testkit.Timeout, id+" to be "+want, func() (bool, string) {
			j, err := c.Job(ctx, id)
			if err != nil {
				return false, err.Error()
			}
			return j.State == want, j.State
		})
	}
	release(1)
	for _, id := range first {
		state(id, flow.StateCompleted)
	}
	// a delivery wakes the parent in the child's own ack: by now it would be
	j, err := c.Job(ctx, e.ID)
	testkit.Must(t, err)
	if j.State != flow.StateScheduled || j.WaitingCount != 2 || runs.Load() != 1 {
		t.Fatalf("after the earlier parent's children finished: %s waiting for %d, %d runs; want scheduled waiting for its own two, one run",
			j.State, j.WaitingCount, runs.Load())
	}
	release(2)
	state(e.ID, flow.StateCompleted)
	if n := runs.Load(); n != 2 {
		t.Errorf("the parent ran %d times, want 2", n)
	}
}
