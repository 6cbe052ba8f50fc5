package step_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestBadSignalDiscardedThenRedriven: a signal whose payload its wait
// cannot decode parks the job (bad_signal), and parks it again at a
// redrive while it is kept. An operator discards it
// (admin.Client.DiscardSignals), and the redriven job waits for the next
// one, which it takes: the job completes. A running job's signals are not
// discarded, nor a completed one's, and a name with none kept says 0.
func TestBadSignalDiscardedThenRedriven(t *testing.T) {
	h, _, j := runApproval(t)
	ctx := context.Background()
	ops := admin.New(h.Client)
	if err := h.Client.Signal(ctx, j.ID, "decision", "not a decision"); err != nil {
		t.Fatal(err)
	}
	parked := func() {
		t.Helper()
		j = h.Resume(j.ID, 10*time.Second).Job
		if j.State != flow.StateArchived || j.Reason != "bad_signal" {
			t.Fatalf("job with a bad signal: %s (%s), want archived, bad_signal", j.State, j.Reason)
		}
	}
	parked()
	if _, err := ops.Redrive(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	parked() // the signal is still kept: parked again

	if n, err := ops.DiscardSignals(ctx, j.ID, "other"); err != nil || n != 0 {
		t.Fatalf("discard a name with none kept: %d %v, want 0", n, err)
	}
	if _, err := ops.DiscardSignals(ctx, j.ID, "bad name!"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("discard an invalid name: %v, want ErrInvalid", err)
	}
	if n, err := ops.DiscardSignals(ctx, j.ID, "decision"); err != nil || n != 1 {
		t.Fatalf("discard the bad signal: %d %v, want 1", n, err)
	}
	if j = readJob(t, h, j.ID); len(j.Signals) != 0 || j.State != flow.StateArchived {
		t.Fatalf("after the discard: %s, signals %v; want archived, none kept", j.State, j.Signals)
	}
	if _, err := ops.Redrive(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if j.State != flow.StateScheduled || len(j.AwaitingSignals) != 1 {
		t.Fatalf("redriven job: %s awaiting %v, want scheduled for its decision", j.State, j.AwaitingSignals)
	}
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{OK: true, By: "ada"}); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if r := resultOf(t, j); r != "approved by ada" {
		t.Fatalf("result %q", r)
	}
	var se *sluicetype.StateError
	if _, err := ops.DiscardSignals(ctx, j.ID, "decision"); !errors.As(err, &se) || se.State != flow.StateCompleted {
		t.Fatalf("discard on a completed job: %v, want a StateError", err)
	}
	if _, err := ops.DiscardSignals(ctx, "default:0:nosuchjob", "decision"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("discard on a missing job: %v, want ErrNotFound", err)
	}
}
