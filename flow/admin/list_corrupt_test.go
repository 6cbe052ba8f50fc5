package admin_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestListShowsCorruptJobsKindAndState: a listed job one of whose fields
// cannot be read (corrupt data: an attempt counter "zz") is listed with
// what is wrong in LastError, and with the kind and state it does have,
// so that an operator can tell which job it is. It was listed with a
// blank kind.
func TestListShowsCorruptJobsKindAndState(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "ann"})
	ref, ok := keys.ParseRef(a.ns, id)
	if !ok {
		t.Fatalf("job ID %s", id)
	}
	if err := env.Client(t).HSet(a.ctx, ref.Job(ref.Local), keys.FieldAttempt, "zz").Err(); err != nil {
		t.Fatal(err)
	}
	page, err := a.ops.ListJobs(a.ctx, admin.ListOptions{Queue: "default", State: flow.StateAvailable})
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("listing: %+v %v, want the one job", page, err)
	}
	j := page.Jobs[0]
	if j.ID != id || j.Kind != (email{}).Kind() || j.State != flow.StateAvailable || !strings.Contains(j.LastError, "zz") {
		t.Errorf("listed %+v; want %s of kind %s, available, its LastError saying what cannot be read", j, id, (email{}).Kind())
	}
}
