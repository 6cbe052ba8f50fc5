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
)

type doomedParent struct{}

func (doomedParent) Kind() string { return "doomed-parent" }

// TestSpawnRefusesChildDueAfterItsDeadline: a child whose WithDelay makes
// it due at or after its WithDeadline could never run: the store refuses
// it, and the Spawn step fails with ErrInvalid naming it. Before, the
// child was added, and archived deadline_exceeded when it came due.
func TestSpawnRefusesChildDueAfterItsDeadline(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	spawned := make(chan error, 1)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[childJob]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedParent]) error {
		_, err := flow.Spawn(ctx, "late", flow.Item{Args: childJob{I: 1},
			Opts: []flow.EnqueueOption{flow.WithDelay(time.Hour), flow.WithDeadline(time.Now().Add(time.Minute))}})
		spawned <- err
		return flow.Skip("done")
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	res, err := c.Enqueue(context.Background(), doomedParent{})
	testkit.Must(t, err)
	if err := <-spawned; !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("Spawn of a child due after its deadline: %v, want ErrInvalid", err)
	}
	testkit.WaitState(t, c, w.Sig, res.ID, flow.StateArchived)
	if n := len(rdb.Keys(context.Background(), "{"+ns+":*:j:*").Val()); n != 1 {
		t.Fatalf("%d job keys, want the parent's alone", n)
	}
}
