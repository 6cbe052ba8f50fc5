package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestCursorOfAnotherListingRefused: a --cursor is the place where one
// listing (a queue's jobs of one state, of one kind) stopped. Given to
// another listing (another state, queue or kind), it is not one that
// listing gave: admin.ListJobs documents such a cursor as ErrInvalid
// ("read as a start, or by the script, it listed the wrong jobs, or
// none"), and bad input gets a clear typed error. The cursor of a page of
// archived jobs, given to a listing of cancelled jobs, is taken instead:
// the listing starts below the archived job's place and says there are no
// cancelled jobs (exit 0), though there are.
func TestCursorOfAnotherListingRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // a1, a2 archived; v1 available; s1 scheduled
	f.must("jobs", "cancel", "default:0:v1")
	f.must("jobs", "cancel", "default:0:s1")
	f.clk.Advance(time.Second)

	var page listJSON
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "list", "--state", flow.StateArchived, "--limit", "1")), &page); err != nil {
		t.Fatal(err)
	}
	if page.Next == "" {
		t.Fatalf("a page of one of two archived jobs has no cursor: %+v", page)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"another state", []string{"jobs", "list", "--state", flow.StateCancelled, "--cursor", page.Next}},
		{"another kind", []string{"jobs", "list", "--state", flow.StateArchived, "--kind", "sms", "--cursor", page.Next}},
	} {
		out, errs, code := f.sluice(tc.args...)
		if code != exitUsage {
			t.Errorf("%s: sluice %q: exit %d, want %d (the cursor is not one of this listing's)\nstdout: %s\nstderr: %s",
				tc.name, tc.args, code, exitUsage, out, errs)
		}
	}
	// the listing of cancelled jobs from its start has both
	var all listJSON
	if err := json.Unmarshal([]byte(f.must("--json", "jobs", "list", "--state", flow.StateCancelled)), &all); err != nil || len(all.Jobs) != 2 {
		t.Fatalf("cancelled jobs: %+v, %v; want 2", all, err)
	}
}
