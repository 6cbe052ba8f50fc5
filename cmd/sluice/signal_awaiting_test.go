package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestSignalToJobWaitingForAnother: a workflow is suspended waiting
// for the signal "approved" (recorded on the job: JobInfo.AwaitingSignals).
// An operator misspells it: `sluice jobs signal ID aproved`. The signal is
// kept (a later step may wait for it) and the job stays suspended; the
// command said only "sent signal aproved to ID". It now notes that the job
// was not woken and names the signal it waits for.
func TestSignalToJobWaitingForAnother(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.suspended("w1", "approved")
	out, errOut, code := f.sluice("jobs", "signal", "default:0:w1", "aproved")
	j, err := f.c.Job(f.ctx, "default:0:w1")
	if err != nil {
		t.Fatal(err)
	}
	if !j.Suspended || len(j.AwaitingSignals) != 1 || j.AwaitingSignals[0] != "approved" {
		t.Fatalf("job after the signal: suspended %v awaiting %v", j.Suspended, j.AwaitingSignals)
	}
	if code == exitOK && !strings.Contains(out+errOut, "approved") {
		t.Fatalf("signal aproved to a job suspended waiting for approved: exit %d, %q%q: reported as sent, "+
			"with no word that the job was not woken and waits for \"approved\"", code, out, errOut)
	}
}

// suspended enqueues job local and settles its attempt suspended, waiting
// for signals (as step.WaitSignal leaves it).
func (f *fixture) suspended(local string, signals ...string) {
	f.t.Helper()
	spec, err := store.SuspendSpec(&sluicetype.SuspendedError{Signals: signals})
	if err != nil {
		f.t.Fatal(err)
	}
	f.enqueue(local, email{To: "wf@example.com"})
	f.settle(10*time.Millisecond, store.Ack{Code: store.CodeSuspend, Data: []byte(spec)})
}
