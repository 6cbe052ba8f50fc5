package flow_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type subsetParent struct{}

func (subsetParent) Kind() string { return "subset-parent" }

type subsetChild struct{ I int }

func (subsetChild) Kind() string { return "subset-child" }

// TestJoinOfSomeChildrenSuspends: a parent spawns two children in one
// step, joins the first, then the second alone (Children{Step, IDs[1:]})
// while it runs. The parent suspends, waiting for one child, and runs
// once more when it finishes. Before, the join's wait was counted against
// every child of the step that had finished, so it was over at once: the
// parent was never suspended and ran again on every ack (hundreds of
// times in half a second) until the child finished.
func TestJoinOfSomeChildrenSuspends(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	hold := make(chan struct{})
	var runs atomic.Int64
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[subsetChild]) error {
		if job.Args.I == 1 {
			<-hold
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[subsetParent]) error {
		runs.Add(1)
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: subsetChild{I: 0}}, flow.Item{Args: subsetChild{I: 1}})
		if err != nil {
			return err
		}
		if _, err := flow.Join[struct{}](ctx, &flow.Children{Step: kids.Step, IDs: kids.IDs[:1]}, flow.CollectAll); err != nil {
			return err
		}
		_, err = flow.Join[struct{}](ctx, &flow.Children{Step: kids.Step, IDs: kids.IDs[1:]}, flow.CollectAll)
		return err
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 4}, nil)
	released := false
	t.Cleanup(func() {
		if !released {
			close(hold)
		}
	})
	e, err := c.Enqueue(context.Background(), subsetParent{})
	testkit.Must(t, err)
	var suspended int64
	redistest.Within(t, testkit.Timeout, "the parent to suspend on its second child", func() (bool, string) {
		j, err := c.Job(context.Background(), e.ID)
		if err != nil {
			return false, err.Error()
		}
		suspended = runs.Load()
		return j.State == flow.StateScheduled && j.WaitingFor == "kids" && j.WaitingCount == 1,
			fmt.Sprintf("%s waiting for %q (%d), %d runs", j.State, j.WaitingFor, j.WaitingCount, suspended)
	})
	close(hold)
	released = true
	redistest.Within(t, testkit.Timeout, "the parent to complete", func() (bool, string) {
		j, err := c.Job(context.Background(), e.ID)
		if err != nil {
			return false, err.Error()
		}
		return j.State == flow.StateCompleted, j.State
	})
	if n := runs.Load(); n != suspended+1 {
		t.Errorf("the parent ran %d times after it suspended, want once (when its child finished)", n-suspended)
	}
}
