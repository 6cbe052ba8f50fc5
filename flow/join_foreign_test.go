package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type foreignParent struct{ Other string }

func (foreignParent) Kind() string { return "foreign-parent" }

type foreignJob struct{}

func (foreignJob) Kind() string { return "foreign-job" }

// TestJoinOfAnotherJobsIDIsInvalid: a parent joins, as its children, the
// ID of a job it did not spawn (an ordinary job, finished already). No
// such job ever tells the parent it finished (only a spawned child's end
// is recorded on its parent), so Join can never see it done: the parent
// waited for it for ever, running again at every JoinRecheck. Join
// refuses it as ErrInvalid instead, naming the ID.
func TestJoinOfAnotherJobsIDIsInvalid(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	got := make(chan error, 8)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[foreignJob]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[foreignParent]) error {
		_, err := flow.Join[struct{}](ctx, &flow.Children{Step: "kids", IDs: []string{job.Args.Other}}, flow.CollectAll)
		got <- err
		if errors.Is(err, flow.ErrInvalid) {
			return flow.Skip(err.Error())
		}
		return err
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2}, nil)
	ctx := context.Background()
	other, err := c.Enqueue(ctx, foreignJob{})
	testkit.Must(t, err)
	wctx, cancel := context.WithTimeout(ctx, testkit.Timeout)
	defer cancel()
	if j, err := c.Wait(wctx, other.ID); err != nil || j.State != flow.StateCompleted {
		t.Fatalf("the other job: %v, %v", j, err)
	}
	if _, err := c.Enqueue(ctx, foreignParent{Other: other.ID}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		var w *sluicetype.WaitingError
		if errors.As(err, &w) {
			t.Fatalf("the parent waits for job %s, which it did not spawn and which finished: it waits for ever (%v)", other.ID, err)
		}
		if !errors.Is(err, flow.ErrInvalid) {
			t.Fatalf("Join of another job's ID: %v, want ErrInvalid", err)
		}
	case <-time.After(testkit.Timeout):
		t.Fatal("the parent never ran")
	}
}
