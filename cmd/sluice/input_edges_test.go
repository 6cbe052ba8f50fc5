package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestQueuesStatsRepeatedQueue: `queues stats Q Q` prints Q's row once
// (and one entry in --json), as queues pause, run-now and effects redrive
// take each target once (root.go's once); it printed it twice.
func TestQueuesStatsRepeatedQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	out, errs, code := f.sluice("queues", "stats", "default", "default")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if n := strings.Count(out, "\ndefault "); n != 1 {
		t.Errorf("queues stats default default: %d rows for default, want 1:\n%s", n, out)
	}
	out, errs, code = f.sluice("--json", "queues", "stats", "default", "default")
	var rows []map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("--json: exit %d, stdout %q stderr %q", code, out, errs)
	}
	if len(rows) != 1 {
		t.Errorf("--json queues stats default default: %d entries, want 1", len(rows))
	}
}

// TestJobIDTrailingSpace: a job ID pasted with a trailing space
// ("default:0:a1 ") can name no job (flow.WithID refuses spaces, generated
// and child IDs have none): it is a malformed ID, exit 2 (the docs' exit
// codes). Every command answered "not found" (exit 3), with no word of
// the space, hidden at the end of the line (found by a helper's audit).
func TestJobIDTrailingSpace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	for _, args := range [][]string{
		{"jobs", "show", "default:0:a1 "},
		{"jobs", "delete", "default:0:a1 "},
		{"jobs", "cancel", "default:0:s1 "},
		{"jobs", "run-now", "default:0:s1\t"},
		{"redrive", "default:0:a1 "},
	} {
		_, errs, code := f.sluice(args...)
		if code != exitUsage && !strings.Contains(strings.ReplaceAll(errs, "namespace", ""), "space") {
			t.Errorf("sluice %q: exit %d, stderr %q; want exit %d naming the whitespace", args, code, errs, exitUsage)
		}
	}
}

// TestSignalToSleepingJob: a workflow suspended on a timer alone
// (step.Sleep) sent a signal it does not wait for gets a note that it was
// not woken, as a job suspended on other signals does
// (TestSignalToJobWaitingForAnother); the command said only "sent signal
// approved to ID" (found by a helper's audit).
func TestSignalToSleepingJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	spec, err := store.SuspendSpec(&sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	f.enqueue("sl", email{To: "wf@example.com"})
	f.settle(10*time.Millisecond, store.Ack{Code: store.CodeSuspend, Data: []byte(spec)})
	out, errOut, code := f.sluice("jobs", "signal", "default:0:sl", "approved")
	j, err := f.c.Job(f.ctx, "default:0:sl")
	if err != nil {
		t.Fatal(err)
	}
	if !j.Suspended {
		t.Fatalf("job after the signal is not suspended: %+v", j)
	}
	if code == exitOK && !strings.Contains(out+errOut, "not woken") {
		t.Fatalf("signal to a job asleep on a timer: exit %d, %q%q: reported as sent, with no word that it was not woken", code, out, errOut)
	}
}
