package admin_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sticky"
)

// TestListAvailableShowsPinned: an available job pinned to a worker
// (sticky.To) is available (QueueStats counts it), and ListJobs of the
// available state lists it, as it lists the unpinned ones: an operator
// looking for jobs stranded on a worker that is gone finds them there.
func TestListAvailableShowsPinned(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	plain := a.enqueue(email{To: "a"}, flow.WithQueue("mail"))
	waits := a.enqueue(email{To: "b"}, flow.WithQueue("mail"), sticky.To("gone-1", sticky.Wait()))
	after := a.enqueue(email{To: "c"}, flow.WithQueue("mail"), sticky.To("gone-2", sticky.After(time.Hour)))
	page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "mail", State: flow.StateAvailable})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, j := range page.Jobs {
		listed[j.ID] = true
	}
	for _, id := range []string{plain, waits, after} {
		if !listed[id] {
			t.Errorf("available job %s not listed: listed %v", id, listed)
		}
	}
}
