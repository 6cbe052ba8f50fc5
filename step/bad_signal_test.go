package step_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestBadSignalDiscardedThenRedriven: a signal whose payload its wait
// cannot decode parks the job (bad_signal), and parks it again at a
// redrive while it is kept. A good signal sent after it is kept too. An
// operator discards the bad one (admin.Client.DiscardSignal: the earliest,
// the one the wait takes), and the redriven job takes the good one and
// completes. A completed job's signals are not discarded, and a name with
// none kept is ErrSignalNotFound.
func TestBadSignalDiscardedThenRedriven(t *testing.T) {
	h, _, j := runApproval(t)
	ctx := context.Background()
	ops := admin.New(h.Client)
	if err := h.Client.Signal(ctx, j.ID, "decision", "not a decision"); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Signal(ctx, j.ID, "decision", decision{OK: true, By: "ada"}); err != nil {
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
	parked() // the bad signal is still kept, the wait's next: parked again

	if sg, err := ops.DiscardSignal(ctx, j.ID, "other"); !errors.Is(err, admin.ErrSignalNotFound) || !sluicetype.IsNotFound(err) {
		t.Fatalf("discard a name with none kept: %+v %v, want ErrSignalNotFound", sg, err)
	}
	if _, err := ops.DiscardSignal(ctx, j.ID, "bad name!"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("discard an invalid name: %v, want ErrInvalid", err)
	}
	sg, err := ops.DiscardSignal(ctx, j.ID, "decision")
	var bad string
	if err != nil || sg.Seq != 1 || msgpack.Unmarshal(sg.Payload, &bad) != nil || bad != "not a decision" {
		t.Fatalf("discard the bad signal: %+v %v, want #1, the bad payload", sg, err)
	}
	if j = readJob(t, h, j.ID); len(j.Signals) != 1 || j.State != flow.StateArchived {
		t.Fatalf("after the discard: %s, signals %v; want archived, the good one kept", j.State, j.Signals)
	}
	if _, err := ops.Redrive(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	j = h.Resume(j.ID, 10*time.Second).Job
	if r := resultOf(t, j); r != "approved by ada" {
		t.Fatalf("result %q", r)
	}
	var se *sluicetype.StateError
	if _, err := ops.DiscardSignal(ctx, j.ID, "decision"); !errors.As(err, &se) || se.State != flow.StateCompleted {
		t.Fatalf("discard on a completed job: %v, want a StateError", err)
	}
	if _, err := ops.DiscardSignal(ctx, "default:0:nosuchjob", "decision"); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("discard on a missing job: %v, want ErrNotFound", err)
	}
}
