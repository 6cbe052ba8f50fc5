package admin_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// TestSignalReportsDuplicate: a signal is kept the first time its key is
// used and reported as a duplicate, not kept again, the second time; one
// without a key is kept each time; an unknown job is ErrNotFound.
func TestSignalReportsDuplicate(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "wf"})
	for i, want := range []bool{false, true} {
		res, err := a.ops.Signal(a.ctx, id, "approved", "yes", flow.WithSignalKey("k1"))
		if err != nil || res.Duplicate != want {
			t.Fatalf("signal %d with key k1: %+v, %v; want duplicate %v", i+1, res, err, want)
		}
	}
	for i := range 2 {
		if res, err := a.ops.Signal(a.ctx, id, "approved", "again"); err != nil || res.Duplicate {
			t.Fatalf("signal %d without a key: %+v, %v", i+1, res, err)
		}
	}
	j, err := a.ops.Job(a.ctx, id)
	if err != nil || len(j.Signals) != 3 {
		t.Fatalf("kept signals: %+v, %v; want 3 (k1 once, two without a key)", j, err)
	}
	if _, err := a.ops.Signal(a.ctx, "default:0:nope", "approved", nil); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("unknown job: %v, want ErrNotFound", err)
	}
	// an empty key (an unset variable) is no key: the retry it was meant
	// to make safe would keep the signal twice
	if _, err := a.ops.Signal(a.ctx, id, "approved", "empty", flow.WithSignalKey("")); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("signal with an empty key: %v, want ErrInvalid", err)
	}
	if j, err := a.ops.Job(a.ctx, id); err != nil || len(j.Signals) != 3 {
		t.Fatalf("after the refused signal: %d signals, %v; want 3", len(j.Signals), err)
	}
}
