package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// TestKindNameRefused: a --kind that is no valid kind name (flow.ValidKind:
// "email " from a variable with a trailing space, "e-mail!" mistyped)
// can match no job, as no job can be enqueued with it: redrive, release
// and jobs delete by selector scanned the whole state, matched nothing and
// exited 0 ("redrove 0 jobs"), and jobs list said there were no such jobs.
// It is a usage error (exit 2) naming the kind, as a malformed queue name
// is, before anything is read or moved.
func TestKindNameRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // archived a1, a2 (kind email)
	for _, args := range [][]string{
		{"redrive", "--queue", "default", "--kind", "email "},
		{"redrive", "--queue", "default", "--kind", "e-mail!", "--dry-run"},
		{"release", "--queue", "default", "--kind", "-email"},
		{"jobs", "delete", "--queue", "default", "--state", "archived", "--kind", "email\n"},
		{"jobs", "list", "--queue", "default", "--state", "archived", "--kind", "em ail"},
		{"--json", "redrive", "--queue", "default", "--kind", "email "},
	} {
		out, errs, code := f.sluice(args...)
		if code != exitUsage || !strings.Contains(errs, "--kind") {
			t.Errorf("sluice %q: exit %d, stderr %q; want %d naming --kind\nstdout: %s", args, code, errs, exitUsage, out)
		}
		if j, err := f.c.Job(f.ctx, "default:0:a1"); err != nil || j.State != flow.StateArchived {
			t.Fatalf("sluice %q moved a1: %+v %v", args, j, err)
		}
	}
	// a valid kind still selects
	if out := f.must("redrive", "--queue", "default", "--kind", "email", "--dry-run"); !strings.Contains(out, "would redrive 2 jobs") {
		t.Fatalf("--kind email: %q", out)
	}
}
