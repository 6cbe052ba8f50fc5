package main

import (
	"testing"
)

// TestSignalEmptyDataRefused: --data takes the payload as JSON, and an
// empty value is no JSON: given "--data $PAYLOAD" with the variable unset,
// the command sent the signal with no payload (nil) and said "sent", exit
// 0, waking the workflow with a zero value in place of what was meant
// (a second send with the payload is then a second signal, which a later
// wait takes). --key "" is refused for the same reason; --data "" must be
// too, with nothing sent.
func TestSignalEmptyDataRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.suspended("w1", "approved")
	out, errs, code := f.sluice("jobs", "signal", "default:0:w1", "approved", "--data", "")
	if code != exitUsage {
		t.Errorf("jobs signal --data '': exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, out, errs)
	}
	j, err := f.c.Job(f.ctx, "default:0:w1")
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Signals) != 0 || !j.Suspended {
		t.Fatalf("jobs signal --data '' sent a signal: %d kept, suspended %v, state %s", len(j.Signals), j.Suspended, j.State)
	}
}
