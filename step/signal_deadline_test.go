package step_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/flowtest"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// TestSignalPastDeadline: a workflow suspended waiting for a signal whose
// deadline (WithDeadline) has passed by store time is archived
// (deadline_exceeded) by the claim that meets it, instead of running. A
// signal sent to it in between was kept and answered ok ("a workflow
// waiting for it wakes at once"), and no wait ever took it: it is now
// refused as for a finished job, nothing kept; a keyed retry of a signal
// kept before the deadline is still a duplicate, not a refusal.
func TestSignalPastDeadline(t *testing.T) {
	reg := flow.NewRegistry()
	if err := flow.RegisterResult(reg, func(ctx context.Context, _ *flow.Job[approval]) (string, error) {
		if _, _, err := step.WaitSignal[decision](ctx, "other", 0); err != nil {
			return "", err
		}
		d, _, err := step.WaitSignal[decision](ctx, "decision", 0)
		return d.By, err
	}); err != nil {
		t.Fatal(err)
	}
	h := flowtest.New(t, reg)
	ctx := context.Background()
	start := h.Clock.Now()
	j := h.Run(approval{}, flowtest.WithEnqueueOptions(flow.WithDeadline(start.Add(time.Hour)))).Job
	if !j.Suspended || j.State != flow.StateScheduled {
		t.Fatalf("waiting job: %s, suspended %v", j.State, j.Suspended)
	}
	// a keyed signal before the deadline, for a later wait: kept
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{By: "early"}, flow.WithSignalKey("k1")); err != nil {
		t.Fatal(err)
	}
	h.Clock.Advance(2 * time.Hour)
	err := h.Client.Signal(ctx, j.ID, "other", decision{By: "late"})
	var se *sluicetype.StateError
	if !errors.As(err, &se) || !errors.Is(err, sluicetype.ErrWrongState) {
		t.Errorf("a signal past the job's deadline: %v; want a StateError (ErrWrongState)", err)
	}
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{By: "early"}, flow.WithSignalKey("k1")); err != nil {
		t.Errorf("a keyed retry of a signal kept before the deadline: %v; want nil (a duplicate)", err)
	}
	if j = readJob(t, h, j.ID); len(j.Signals) != 1 || j.Signals[0].Name != "decision" {
		t.Errorf("kept signals %+v; want the early one alone", j.Signals)
	}
	if j = h.Resume(j.ID, 10*time.Second).Job; j.State != flow.StateArchived || j.Reason != "deadline_exceeded" {
		t.Fatalf("after its deadline: %s %s", j.State, j.Reason)
	}
}
