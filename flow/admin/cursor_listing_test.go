package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
)

// TestListJobsRefusesAnotherListingsCursor: ListJobs documents a cursor
// that is not one this listing gave as ErrInvalid (read otherwise, "it
// listed the wrong jobs, or none"). A cursor of another listing of the
// queue's partition count and the same cursor form (another finished
// state, another queue, another kind) was taken: the listing of cancelled
// jobs from an archived page's cursor started at the archived job's
// deletion time and answered no job, no error, though two are cancelled.
func TestListJobsRefusesAnotherListingsCursor(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)
	for range 2 {
		a.enqueue(email{To: "x"}, flow.WithMaxAttempts(1))
	}
	a.finish("default", 1, time.Second, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "no"})
	for range 2 {
		id := a.enqueue(email{To: "y"}, flow.WithQueue("other"))
		if _, err := a.ops.CancelJob(a.ctx, id); err != nil {
			t.Fatal(err)
		}
		id = a.enqueue(email{To: "y"})
		if _, err := a.ops.CancelJob(a.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	first, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "default", State: flow.StateArchived, Limit: 1})
	if err != nil || first.Next == "" {
		t.Fatalf("first page of archived jobs: %+v, %v", first, err)
	}
	// the cursor is taken back by its own listing
	if _, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "default", State: flow.StateArchived, Limit: 1, Cursor: first.Next}); err != nil {
		t.Fatalf("its own listing refused the cursor: %v", err)
	}
	for _, o := range []admin.ListOptions{
		{Queue: "default", State: flow.StateCancelled, Cursor: first.Next},
		{Queue: "other", State: flow.StateArchived, Cursor: first.Next},
		{Queue: "default", State: flow.StateArchived, Kind: "sms", Cursor: first.Next},
	} {
		page, err := a.ops.ListJobs(a.ctx, o)
		if !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("ListJobs(%+v) with an archived page's cursor of queue default: %d jobs, %v; want ErrInvalid",
				o, len(page.Jobs), err)
		}
	}
}
