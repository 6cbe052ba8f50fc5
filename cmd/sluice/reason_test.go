package main

import (
	"strings"
	"testing"
)

// TestReasonUsage: a --reason that no job of the selected state can have
// (misspelt, another state's, or any on completed jobs) is a usage error
// (exit 2) naming the reasons that state's jobs have, for redrive,
// release and jobs delete alike, with or without --dry-run; nothing
// moves. A reason the state's jobs have selects them.
// testdata/reason.golden holds what each prints.
func TestReasonUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // archived a1, a2 (attempts_exhausted); completed c1
	tr := &transcript{f: f}
	tr.run(exitUsage, "redrive", "--queue", "default", "--reason", "attempts_exhuasted")
	tr.run(exitUsage, "redrive", "--queue", "default", "--reason", "attempts_exhuasted", "--dry-run")
	tr.run(exitUsage, "redrive", "--queue", "default", "--reason", "crash_limit")
	tr.run(exitUsage, "redrive", "--queue", "default", "--state", "cancelled", "--reason", "attempts_exhausted")
	tr.run(exitUsage, "release", "--queue", "default", "--reason", "operator", "--dry-run")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "archived", "--reason", "Skipped", "--dry-run")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "completed", "--reason", "skipped")
	tr.run(exitUsage, "jobs", "delete", "--queue", "default", "--state", "quarantined", "--reason", "nope")
	tr.run(exitOK, "redrive", "--queue", "default", "--reason", "attempts_exhausted", "--dry-run")
	tr.run(exitOK, "jobs", "delete", "--queue", "default", "--state", "archived", "--reason", "skipped", "--dry-run")
	golden(t, "reason", tr.b.String())
	if page := f.must("jobs", "list", "--state", "archived"); strings.Count(page, "default:0:a") != 2 {
		t.Fatalf("archived jobs after the refused commands:\n%s", page)
	}
}
