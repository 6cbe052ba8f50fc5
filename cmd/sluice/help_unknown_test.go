package main

import (
	"strings"
	"testing"
)

// TestHelpUnknownTopic: `sluice help` of a command that does not exist
// is a usage error (exit 2) naming it, with cobra's suggestions, as
// running it is: it printed the help of the root (or of the group
// named before it) and exited 0, as if the command were known.
func TestHelpUnknownTopic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nosuch"}, `unknown command "nosuch" for "sluice"`},
		{[]string{"help", "jobs", "shw"}, `unknown command "shw" for "sluice jobs" (did you mean show?)`},
		{[]string{"help", "queues", "stats", "extra"}, `unknown command "extra" for "sluice queues stats"`},
	} {
		out, errs, code := f.sluice(tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("sluice %q: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, out, errs, tc.want)
		}
	}
	if out := f.must("help"); !strings.Contains(out, "Available Commands:") {
		t.Errorf("sluice help: %q", out)
	}
	if out := f.must("help", "jobs", "show"); !strings.Contains(out, "sluice jobs show ID") {
		t.Errorf("sluice help jobs show: %q", out)
	}
}
