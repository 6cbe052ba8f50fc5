package main

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestEmptySelectorFlagRefused: a selector flag given an empty value
// (--before "$CUTOFF", --kind "$KIND" with the variable unset) bounds
// nothing, so the command acted on every job of the state: `jobs delete
// --queue default --state archived --before ""` deleted the archived jobs
// of every finish time, and said so with exit 0, where the operator
// asked for the old ones only. --namespace, --redis and --key already
// refuse an empty value for this reason (root.go given, signal --key):
// the selector flags must too, before anything is deleted or moved.
func TestEmptySelectorFlagRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // archived a1, a2 (kind email), finished a few seconds before now
	f.clk.Advance(time.Minute)
	for _, args := range [][]string{
		{"jobs", "delete", "--queue", "default", "--state", "archived", "--before", ""},
		{"jobs", "delete", "--queue", "default", "--state", "archived", "--after", ""},
		{"jobs", "delete", "--queue", "default", "--state", "archived", "--kind", ""},
		{"jobs", "delete", "--queue", "default", "--state", "archived", "--reason", ""},
		{"redrive", "--queue", "default", "--before", ""},
		{"redrive", "--queue", "default", "--kind", ""},
		{"jobs", "list", "--queue", "default", "--state", "archived", "--kind", ""},
		{"jobs", "list", "--queue", "", "--state", "archived"},
		{"effects", "list", "--queue", ""},
	} {
		out, errs, code := f.sluice(args...)
		if code != exitUsage {
			t.Errorf("sluice %q: exit %d, want %d (an empty selector flag)\nstdout: %s\nstderr: %s", args, code, exitUsage, out, errs)
		}
		if !f.exists("default:0:a1") || !f.exists("default:0:a2") {
			t.Fatalf("sluice %q deleted archived jobs it was not asked to", args)
		}
		if j, err := f.c.Job(f.ctx, "default:0:a1"); err != nil || j.State != flow.StateArchived {
			t.Fatalf("sluice %q moved a1: %+v %v", args, j, err)
		}
	}
}
