package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestSelectorReason: a selector whose reason Sluice records only on jobs
// of another state, or never records on a state other than archived, is
// ErrInvalid before any batch runs, not a scan that matches nothing and
// reports success; a reason Sluice records on the selected state selects
// its jobs. On archived jobs an unlisted reason (an isolated child's own
// park reason may be any) is a scan: here it matches nothing, which is
// an UnmatchedReasonError (most likely misspelt), not "0 jobs" done.
func TestSelectorReason(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	for range 3 {
		a.enqueue(email{To: "x"}, flow.WithMaxAttempts(1))
	}
	if n := a.finish("default", 1, time.Millisecond, failAck); n != 3 {
		t.Fatalf("archived %d", n)
	}
	for _, sel := range []admin.Selector{
		{Queue: "default", Reason: "crash_limit"},                                    // a quarantined job's
		{Queue: "default", State: flow.StateQuarantined, Reason: "crash_limt"},       // misspelt, not archived
		{Queue: "default", State: flow.StateCancelled, Reason: "attempts_exhausted"}, // an archived job's
		{Queue: "default", State: flow.StateQuarantined, Reason: "operator"},         // a cancelled job's
	} {
		for _, dry := range []bool{true, false} {
			pr, err := a.ops.RedriveSelected(a.ctx, sel, admin.RedriveOptions{DryRun: dry})
			if !errors.Is(err, flow.ErrInvalid) || pr.Batches != 0 {
				t.Errorf("RedriveSelected(%+v, dry run %v): %+v %v, want ErrInvalid", sel, dry, pr, err)
			}
			if sel.State == "" {
				sel.State = flow.StateArchived
			}
			dp, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{DryRun: dry})
			if !errors.Is(err, flow.ErrInvalid) || dp.Batches != 0 {
				t.Errorf("DeleteSelected(%+v, dry run %v): %+v %v, want ErrInvalid", sel, dry, dp, err)
			}
		}
	}
	for _, r := range []string{"attempts_exhuasted", "Attempts_Exhausted"} { // not Sluice's: a child's may be any
		for _, dry := range []bool{true, false} {
			sel := admin.Selector{Queue: "default", Reason: r}
			pr, err := a.ops.RedriveSelected(a.ctx, sel, admin.RedriveOptions{DryRun: dry})
			var ue *admin.UnmatchedReasonError
			if !errors.As(err, &ue) || ue.Reason != r || pr.Matched != 0 || pr.Batches == 0 || !pr.Done {
				t.Errorf("redrive (dry run %v) of archived jobs with reason %q: %+v %v, want a whole scan matching none, and an UnmatchedReasonError", dry, r, pr, err)
			}
			sel.State = flow.StateArchived
			dp, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{DryRun: dry})
			if !errors.As(err, &ue) || dp.Matched != 0 || dp.Batches == 0 || !dp.Done {
				t.Errorf("delete (dry run %v) of archived jobs with reason %q: %+v %v, want a whole scan matching none, and an UnmatchedReasonError", dry, r, dp, err)
			}
		}
	}
	completed := admin.Selector{Queue: "default", State: flow.StateCompleted, Reason: "skipped"}
	if dp, err := a.ops.DeleteSelected(a.ctx, completed, admin.DeleteOptions{DryRun: true}); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("DeleteSelected(%+v): %+v %v, want ErrInvalid (completed jobs have no reason)", completed, dp, err)
	}
	if st, err := a.ops.QueueStats(a.ctx, "default", 0); err != nil || st.Depth[flow.StateArchived] != 3 {
		t.Fatalf("after the refused calls: %v, %v; want the 3 archived jobs", st.Depth, err)
	}
	pr, err := a.ops.RedriveSelected(a.ctx, admin.Selector{Queue: "default", Reason: "attempts_exhausted"}, admin.RedriveOptions{DryRun: true})
	if err != nil || pr.Matched != 3 {
		t.Fatalf("redrive dry run of attempts_exhausted: %+v %v, want 3 matched", pr, err)
	}
}
