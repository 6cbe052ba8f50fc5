package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestHuntPauseJSONSaysWhatItPaused: `sluice --json queues pause A B`
// where B's pause fails after A's went through (here B's partition is at
// a newer data model, which its pause script refuses). Without --json the
// command prints "paused A" before B's error; with --json it printed
// nothing at all on stdout and exit 1, so a script reading the JSON
// believes nothing changed while every worker has stopped claiming A.
func TestHuntPauseJSONSaysWhatItPaused(t *testing.T) {
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
	text, _, _ := f.sluice("queues", "pause", "default", "other")
	f.must("queues", "resume", "default")
	out, errs, code := f.sluice("--json", "queues", "pause", "default", "other")
	if code == exitOK {
		t.Fatalf("exit 0 though other's pause failed; stdout %q", out)
	}
	if !strings.Contains(text, "paused default") {
		t.Fatalf("text output %q does not say default was paused", text)
	}
	if !strings.Contains(out, "default") {
		t.Fatalf("--json: stdout %q, stderr %q (exit %d): nothing says queue default was paused, which it was (the text output says %q)",
			out, errs, code, strings.TrimSpace(text))
	}
}
