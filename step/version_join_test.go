package step_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/step"
)

type joinVersioned struct{}

func (joinVersioned) Kind() string { return "join-versioned" }

// TestVersionAfterJoinIsNew: a new job whose Select (a signal, or a timer
// giving up) is decided by the signal, and which then spawns and joins a
// child, reaches a change point after the join for the first time in the
// attempt the child's end wakes: it takes the new branch (max). A helper's
// audit found it took the old one: that attempt committed no step before
// the point, and the Select's losing timer, still kept, was read as the
// trace of a suspension past the point.
func TestVersionAfterJoinIsNew(t *testing.T) {
	t.Parallel()
	reg := kidRegistry(t)
	got := -1
	register(t, reg, func(ctx context.Context, _ *flow.Job[joinVersioned]) error {
		sel := step.Select(ctx, "approval")
		step.OnSignal[string](sel, "decision")
		sel.After("give-up", 72*time.Hour)
		if err := sel.Wait(); err != nil {
			return err
		}
		ch, err := flow.Spawn(ctx, "kids", flow.Item{Args: resultKid{}})
		if err != nil {
			return err
		}
		if _, err := flow.Join[kidOut](ctx, ch, flow.CollectAll); err != nil {
			return err
		}
		v, err := step.Version(ctx, "after-join", step.DefaultVersion, 1)
		if err != nil {
			return err
		}
		got = v
		return nil
	})
	h := flowtest.New(t, reg)
	j := h.Run(joinVersioned{}).Job
	if j.State != flow.StateScheduled {
		t.Fatalf("waiting: %s (%s)", j.State, j.LastError)
	}
	if err := h.Client.Signal(context.Background(), j.ID, "decision", "ok"); err != nil {
		t.Fatal(err)
	}
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateCompleted {
		t.Fatalf("after the signal: %s (%s)", j.State, j.LastError)
	}
	if got != 1 {
		t.Fatalf("a new job reaching the change point for the first time got version %d; want 1 (max)", got)
	}
}
