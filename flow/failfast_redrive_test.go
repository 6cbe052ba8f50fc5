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
)

type failFastParent struct{}

func (failFastParent) Kind() string { return "failfast-parent" }

type failFastChild struct{ I int }

func (failFastChild) Kind() string { return "failfast-child" }

// TestFailFastAfterRedrivenChildCompletes: a FailFast parent saw child 0
// fail; an operator redrove that child, which completed, while child 1
// still runs. The parent must wait for child 1 again, suspended, not
// wake at once on every ack for the failure the child's later completion
// replaced (the join's failure count was never lowered: the parent ran
// thousands of times a second).
func TestFailFastAfterRedrivenChildCompletes(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	var failing atomic.Bool
	failing.Store(true)
	hold := make(chan struct{})
	var runs atomic.Int64
	sawFailure := make(chan string, 16)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[failFastChild]) error {
		if job.Args.I == 0 {
			if failing.Load() {
				return flow.Skip("child 0 fails the first time")
			}
			return nil
		}
		select {
		case <-hold:
		case <-ctx.Done():
		}
		return ctx.Err()
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[failFastParent]) error {
		runs.Add(1)
		kids, err := flow.Spawn(ctx, "kids", flow.Item{Args: failFastChild{I: 0}}, flow.Item{Args: failFastChild{I: 1}})
		if err != nil {
			return err
		}
		_, err = flow.Join[struct{}](ctx, kids, flow.FailFast)
		if cf := (*flow.ChildFailedError)(nil); errors.As(err, &cf) {
			sawFailure <- cf.ID
		}
		return err
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 4,
		Backoff: func(int) time.Duration { return 50 * time.Millisecond }}, nil)
	t.Cleanup(func() { close(hold) })
	ctx := context.Background()
	res, err := c.Enqueue(ctx, failFastParent{})
	testkit.Must(t, err)
	failed := testkit.Recv(t, sawFailure, "the parent's join to see child 0 fail")
	failing.Store(false)
	if _, err := admin.New(c).Redrive(ctx, failed); err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, c, w.Sig, failed, flow.StateCompleted)
	// the parent's next run (a retry of its failed join) finds child 1
	// still running and suspends on it
	p := testkit.WaitState(t, c, w.Sig, res.ID, flow.StateScheduled)
	for p.WaitingFor != "kids" {
		p = testkit.WaitState(t, c, w.Sig, res.ID, flow.StateScheduled)
	}
	before := runs.Load()
	time.Sleep(300 * time.Millisecond)
	if n := runs.Load() - before; n > 1 {
		t.Fatalf("the parent ran %d times in 300 ms while child 1 ran: it wakes at once for the failure the redriven child replaced", n)
	}
	if p, err := c.Job(ctx, res.ID); err != nil || p.State != flow.StateScheduled || p.WaitingCount != 1 {
		t.Fatalf("parent: %+v %v, want scheduled waiting for 1 child", p, err)
	}
}
