package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRunNowGolden: jobs run-now makes scheduled and retryable jobs
// available; an unknown job exits 3, a job in another state 1 with the
// reason (a suspended workflow's Why), a malformed ID 2, no ID 2; several
// IDs are each done and reported, the exit code the one their errors
// share, else 1. testdata/runnow.golden holds what each prints.
func TestRunNowGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	spec, err := store.SuspendSpec(&sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "t", After: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	f.enqueue("z1", email{To: "zoe@example.com"})
	f.settle(10*time.Millisecond, store.Ack{Code: store.CodeSuspend, Data: []byte(spec)}) // a sleeping workflow
	f.enqueue("r1", email{To: "rae@example.com"})
	f.settle(10*time.Millisecond, fail) // retryable
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		f.enqueue(id, email{To: id + "@example.com"}, flow.WithDelay(time.Hour))
	}
	state := func(id string) string {
		t.Helper()
		j, err := f.c.Job(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.State
	}
	if s := state("default:0:r1"); s != flow.StateRetryable {
		t.Fatalf("r1 is %s, want retryable", s)
	}

	tr := &transcript{f: f}
	tr.run(exitOK, "jobs", "run-now", "default:0:s1")
	tr.run(exitOK, "jobs", "run-now", "default:0:s2", "default:0:r1")
	for _, id := range []string{"s1", "s2", "r1"} {
		if s := state("default:0:" + id); s != flow.StateAvailable {
			t.Errorf("%s is %s after run-now, want available", id, s)
		}
	}
	tr.run(exitError, "jobs", "run-now", "default:0:s1") // available already
	tr.run(exitError, "jobs", "run-now", "default:0:z1") // suspended: the reason printed
	tr.run(exitNotFound, "jobs", "run-now", "default:0:nope")
	tr.run(exitNotFound, "jobs", "run-now", "default:0:nope", "default:0:gone")
	tr.run(exitUsage, "jobs", "run-now", "nope")
	tr.run(exitUsage, "jobs", "run-now")
	tr.run(exitError, "jobs", "run-now", "default:0:s3", "default:0:nope", "nope") // one done, two failures of different kinds
	if s := state("default:0:s3"); s != flow.StateAvailable {
		t.Errorf("s3 is %s after a run-now with failures beside it, want available", s)
	}
	if s := state("default:0:z1"); s != flow.StateScheduled {
		t.Errorf("the refused workflow is %s, want scheduled", s)
	}
	golden(t, "runnow", tr.b.String())

	var rep runNowJSON
	out, _, code := f.sluice("--json", "jobs", "run-now", "default:0:s4", "default:0:nope")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitNotFound {
		t.Fatalf("run-now --json: exit %d, %v: %q", code, err, out)
	}
	want := runNowJSON{Available: []string{"default:0:s4"},
		Failed: map[string]string{"default:0:nope": `job default:0:nope not found in namespace "` + f.ns + `"`}}
	if d := cmp.Diff(want, rep); d != "" {
		t.Fatalf("run-now --json (-want +got):\n%s", d)
	}
}
