package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type heldJoinParent struct{}

func (heldJoinParent) Kind() string { return "held-join-parent" }

// TestHeldChildArchivedAtDeadline: a parent spawns a copy of a
// quarantined job (WithQuarantineHold) with a deadline, and joins it. No
// operator releases the quarantined twin; the child, held, is archived
// at its deadline (deadline_exceeded, as WithDeadline says), and the
// parent's Join is told of its end. A review found the child scheduled
// for ever, and the parent waiting for ever.
func TestHeldChildArchivedAtDeadline(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	got := make(chan []flow.ChildResult[struct{}], 1)
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[poisonPill]) error { panic("malformed batch") }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[heldJoinParent]) error {
		c, err := flow.Spawn(ctx, "copy", flow.Item{Args: poisonPill{Batch: "bad"},
			Opts: []flow.EnqueueOption{flow.WithQuarantineHold(), flow.WithDeadline(time.Now().Add(2 * time.Second))}})
		if err != nil {
			return err
		}
		res, err := flow.Join[struct{}](ctx, c, flow.CollectAll)
		if err != nil {
			return err
		}
		got <- res
		return nil
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, CrashLimit: 1}, nil)
	ctx := context.Background()
	first, err := c.Enqueue(ctx, poisonPill{Batch: "bad"}, flow.WithQuarantineHold())
	testkit.Must(t, err)
	testkit.WaitState(t, c, w.Sig, first.ID, flow.StateQuarantined)
	parent, err := c.Enqueue(ctx, heldJoinParent{})
	testkit.Must(t, err)
	testkit.WaitState(t, c, w.Sig, parent.ID, flow.StateCompleted)
	res := <-got
	if len(res) != 1 || res[0].State != flow.StateArchived {
		t.Fatalf("join: %+v, want the child archived", res)
	}
	info, err := c.Job(ctx, res[0].ID)
	if err != nil || info.State != flow.StateArchived || info.Reason != "deadline_exceeded" || info.HeldBy != "" {
		t.Fatalf("child: %+v %v, want archived deadline_exceeded, held by none", info, err)
	}
	if j, err := c.Job(ctx, first.ID); err != nil || j.State != flow.StateQuarantined {
		t.Fatalf("twin: %+v %v, want quarantined still", j, err)
	}
}
