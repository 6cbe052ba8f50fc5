package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestDeleteSelectedDryRunCountsAReusedIDOnce: a job scheduled for later
// whose ID was a deleted job's, due in the same bucket of later jobs
// (the deleted job's entry still there beside its own), is counted once
// by a dry run of a delete by selector, as the delete then deletes it
// once; and a listing shows it once.
func TestDeleteSelectedDryRunCountsAReusedIDOnce(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"dup": 1})
	id := a.enqueue(email{To: "old"}, flow.WithQueue("dup"), flow.WithID("x"), flow.WithDelay(time.Hour))
	ok(t, a.ops.DeleteJob(a.ctx, id))
	if again := a.enqueue(email{To: "new"}, flow.WithQueue("dup"), flow.WithID("x"), flow.WithDelay(time.Hour)); again != id {
		t.Fatalf("enqueued again as %s, want %s", again, id)
	}
	page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "dup", State: flow.StateScheduled})
	ok(t, err)
	if len(page.Jobs) != 1 {
		t.Errorf("listing: %d jobs, want the one", len(page.Jobs))
	}
	sel := admin.Selector{Queue: "dup", State: flow.StateScheduled}
	dry, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{DryRun: true})
	ok(t, err)
	real, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{})
	ok(t, err)
	if dry.Matched != 1 || real.Matched != 1 || dry.Examined != real.Examined {
		t.Fatalf("dry run %+v, delete %+v: want one job matched by both, the same examined", dry, real)
	}
}

// TestDeleteSelectedDeletesAReusedIDDueInALaterBucket: a job given the ID
// of a deleted one, due in a later bucket of later jobs than the deleted
// job's entry (still kept in its bucket, stale), is matched and deleted
// by a delete by selector whose step reads both entries, and counted
// once by its dry run. The step marked the job read at its stale entry
// and passed over its own entry after it: neither counted nor deleted.
func TestDeleteSelectedDeletesAReusedIDDueInALaterBucket(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"dup": 1})
	id := a.enqueue(email{To: "old"}, flow.WithQueue("dup"), flow.WithID("x"), flow.WithDelay(time.Hour))
	ok(t, a.ops.DeleteJob(a.ctx, id))
	if again := a.enqueue(email{To: "new"}, flow.WithQueue("dup"), flow.WithID("x"), flow.WithDelay(2*time.Hour)); again != id {
		t.Fatalf("enqueued again as %s, want %s", again, id)
	}
	sel := admin.Selector{Queue: "dup", State: flow.StateScheduled}
	dry, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{DryRun: true})
	ok(t, err)
	real, err := a.ops.DeleteSelected(a.ctx, sel, admin.DeleteOptions{})
	ok(t, err)
	if dry.Matched != 1 || real.Matched != 1 {
		t.Errorf("dry run %+v, delete %+v: want the job matched once by both", dry, real)
	}
	if _, err := a.ops.Job(a.ctx, id); !errors.Is(err, flow.ErrNotFound) {
		t.Errorf("the job after the delete: %v; want ErrNotFound", err)
	}
}
