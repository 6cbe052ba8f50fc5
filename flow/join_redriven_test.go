package flow_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type redrivenParent struct{}

func (redrivenParent) Kind() string { return "redriven-parent" }

type redrivenChild struct{ I int }

func (redrivenChild) Kind() string { return "redriven-child" }

// TestJoinWaitsForRedrivenChild: a CollectAll parent waits for child 1;
// child 0 was archived, and an operator redrives it, so it runs again.
// When child 1 completes, the parent must not collect child 0's old end
// (archived) while child 0 is running again: its outcome is the one its
// new run gives.
func TestJoinWaitsForRedrivenChild(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	var failing atomic.Bool
	failing.Store(true)
	gate0, gate1, rerun := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	joined := make(chan []flow.ChildResult[struct{}], 4)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[redrivenChild]) error {
		g := gate1
		if job.Args.I == 0 {
			if failing.Load() {
				return flow.Skip("child 0 fails the first time")
			}
			rerun <- struct{}{}
			g = gate0
		}
		select {
		case <-g:
		case <-ctx.Done():
		}
		return ctx.Err()
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[redrivenParent]) error {
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: redrivenChild{I: 0}}, flow.Item{Args: redrivenChild{I: 1}})
		if err != nil {
			return err
		}
		res, err := flow.Join[struct{}](ctx, kids, flow.CollectAll)
		if w := (*sluicetype.WaitingError)(nil); errors.As(err, &w) {
			return err
		}
		joined <- res
		return err
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 4}, nil)
	var closed atomic.Bool
	t.Cleanup(func() {
		if !closed.Load() {
			close(gate1)
		}
		close(gate0)
	})
	ctx := context.Background()
	res, err := c.Enqueue(ctx, redrivenParent{})
	testkit.Must(t, err)
	parent := testkit.PollJob(t, c, res.ID, "to wait for child 1", func(j *flow.JobInfo) bool {
		return j.State == flow.StateScheduled && j.WaitingCount == 1
	})
	var ids []string
	if err := parent.DecodeStep("kids", &ids); err != nil || len(ids) != 2 {
		t.Fatalf("the parent's kids step: %v, %v; want two children's IDs", ids, err)
	}
	kid0 := ids[0]
	testkit.WaitState(t, c, w.Sig, kid0, flow.StateArchived)
	failing.Store(false)
	if _, err := admin.New(c).Redrive(ctx, kid0); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, rerun, "child 0 to run again")
	closed.Store(true)
	close(gate1)
	select {
	case got := <-joined:
		if got[0].State != flow.StateRunning && got[0].State != flow.StateCompleted {
			j, _ := c.Job(ctx, kid0)
			t.Fatalf("the parent collected child 0 as %s while it runs again (now %s): its outcome is its new run's", got[0].State, j.State)
		}
	case <-time.After(time.Second):
		// still waiting for child 0: right
	}
}
