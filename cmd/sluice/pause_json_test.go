package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestPauseJSONSaysWhatItPaused: `sluice --json queues pause A B` where
// B's pause fails after A's went through (here B's partition is at a
// newer data model, which its pause script refuses). Without --json the
// command prints "paused A" before B's error; with --json it printed
// nothing at all on stdout and exit 1, so a script reading the JSON
// believed nothing changed while every worker had stopped claiming A.
// The JSON now names the queues changed and those that failed, with the
// exit code of the errors; a failed queue does not stop the ones after
// it (B A pauses A too), and resume does the same.
func TestPauseJSONSaysWhatItPaused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate() // queue "default"
	if _, err := f.c.Enqueue(f.ctx, email{To: "x"}, flow.WithQueue("other")); err != nil {
		t.Fatal(err)
	}
	p := keys.Partition{NS: f.ns, Queue: "other", Index: 0}
	if err := f.st.Client().Set(f.ctx, p.DataModel(), store.DataModel+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	text, _, code := f.sluice("queues", "pause", "default", "other")
	if code != exitError || !strings.Contains(text, "paused default") {
		t.Fatalf("text: exit %d, stdout %q; want exit 1 saying default was paused", code, text)
	}
	f.must("queues", "resume", "default")

	check := func(args ...string) {
		t.Helper()
		out, errs, code := f.sluice(append([]string{"--json", "queues"}, args...)...)
		var got pauseJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%q: stdout %q, stderr %q (exit %d): not JSON: %v", args, out, errs, code, err)
		}
		if code != exitError || !strings.Contains(errs, "other") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 naming other", args, code, errs)
		}
		if len(got.Queues) != 1 || got.Queues[0] != "default" || got.Failed["other"] == "" || len(got.Failed) != 1 {
			t.Errorf("%q --json: %s; want default in queues, other in failed", args, out)
		}
	}
	check("pause", "default", "other")
	check("resume", "default", "other")
	check("pause", "other", "default") // the failure first: default is paused all the same
	if st, err := admin.New(f.c).QueueStats(f.ctx, "default", 0); err != nil || st.Paused != st.Partitions {
		t.Errorf("after pause other default: default has %d of %d partitions paused (%v)", st.Paused, st.Partitions, err)
	}
}
