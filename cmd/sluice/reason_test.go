package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestReasonUsage: a --reason that no job of the selected state can have
// (another state's, misspelt on a state other than archived, or any on
// completed jobs) is a usage error (exit 2) naming the reasons that
// state's jobs have, for redrive, release and jobs delete alike, with or
// without --dry-run; nothing moves. On archived jobs a reason Sluice does
// not record (misspelt, or an isolated child's own) is a scan, and one
// that matches nothing is an error (exit 1) naming the reasons Sluice
// records, not a success. A reason the state's jobs have selects them.
// A finish-time window that starts at the store's now or later (--after
// 0s, a time to come) is a usage error too: no job has finished in it,
// as is one that ends at or before the epoch.
// testdata/reason.golden holds what each prints.
func TestReasonUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // archived a1, a2 (attempts_exhausted); completed c1
	tr := &transcript{f: f}
	tr.run(exitError, "redrive", "--queue", "default", "--reason", "attempts_exhuasted")
	tr.run(exitError, "redrive", "--queue", "default", "--reason", "attempts_exhuasted", "--dry-run")
	tr.run(exitUsage, "redrive", "--queue", "default", "--reason", "crash_limit")
	tr.run(exitUsage, "redrive", "--queue", "default", "--state", "cancelled", "--reason", "attempts_exhausted")
	tr.run(exitUsage, "release", "--queue", "default", "--reason", "operator", "--dry-run")
	tr.run(exitError, "jobs", "delete", "--queue", "default", "--state", "archived", "--reason", "Skipped", "--dry-run")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "completed", "--reason", "skipped")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "quarantined", "--reason", "nope")
	tr.run(exitOK, "redrive", "--queue", "default", "--reason", "attempts_exhausted", "--dry-run")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--reason", "skipped", "--dry-run")
	// an isolated child's own park reason selects its jobs
	f.enqueue("g1", email{To: "gil@example.com"})
	f.settle(10*time.Millisecond, store.Ack{Code: store.CodePark, Reason: "gpu_oom", Message: "parked by an isolated child"})
	tr.run(exitOK, "redrive", "--queue", "default", "--reason", "gpu_oom", "--dry-run")
	// a window that starts now or later holds no finished job
	tr.run(exitUsage, "redrive", "--queue", "default", "--after", "0s", "--dry-run")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--after", "0s", "--dry-run")
	tr.run(exitUsage, "redrive", "--queue", "default", "--after", "2999-01-01T00:00:00Z")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--after", "2999-01-01T00:00:00Z")
	// a --before at or before the epoch holds no finished job: it selected
	// every one (the epoch's first millisecond went to the script as "no
	// bound", the zero time as "now")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--before", "1970-01-01T00:00:00Z")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "completed", "--before", "0001-01-01T00:00:00Z")
	tr.run(exitUsage, "redrive", "--queue", "default", "--before", "1969-12-31T23:59:59Z", "--dry-run")
	// the zero time as --after is every job, as no bound
	tr.run(exitOK, "redrive", "--queue", "default", "--after", "0001-01-01T00:00:00Z", "--dry-run")
	golden(t, "reason", tr.b.String())
	if page := f.must("jobs", "list", "--state", "archived"); strings.Count(page, "default:0:a") != 2 {
		t.Fatalf("archived jobs after the refused commands:\n%s", page)
	}
	if page := f.must("jobs", "list", "--state", "completed"); !strings.Contains(page, "default:0:c1") {
		t.Fatalf("completed jobs after the refused commands:\n%s", page)
	}
}
