package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestShowSuspendedBeforeDeadline: a workflow suspended on a timer (or a
// signal with a timeout) that would wake after its deadline is due at
// the deadline (JobInfo.RunAt), and archived then (deadline_exceeded), not
// woken. jobs show said "sleeping until <the deadline>" and "waiting for
// signal decision, or until <the deadline>", as if the wait ended then.
func TestShowSuspendedBeforeDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deadline := f.clk.Now().Add(30 * time.Minute).Truncate(time.Millisecond)
	for _, c := range []struct {
		id   string
		susp sluicetype.SuspendedError
	}{
		{"nap", sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}}},
		{"ask", sluicetype.SuspendedError{Signals: []string{"decision"}, Timers: []sluicetype.Timer{{Name: "decision.timeout", After: time.Hour}}}},
		{"hold", sluicetype.SuspendedError{Signals: []string{"decision"}}},
	} {
		spec, err := store.SuspendSpec(&c.susp)
		if err != nil {
			t.Fatal(err)
		}
		f.enqueue(c.id, email{To: "wf@example.com"}, flow.WithDeadline(deadline))
		f.settle(0, store.Ack{Code: store.CodeSuspend, Data: []byte(spec)})
		out, errOut, code := f.sluice("jobs", "show", "default:0:"+c.id)
		if code != exitOK {
			t.Fatalf("jobs show %s: exit %d, %s", c.id, code, errOut)
		}
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Suspended:") {
				line = l
			}
		}
		if !strings.Contains(line, "deadline") {
			t.Errorf("jobs show %s: %q: says the wait ends at %s, which is the job's deadline, where it is archived, not woken", c.id, line, when(deadline))
		}
	}
}
