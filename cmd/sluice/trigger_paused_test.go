package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestTriggerNotesPausedQueue: `schedules trigger` of a schedule whose
// queue is paused says so, in text (a note) and in --json
// (paused_queues), as run-now, redrive and release do: the job it added
// waits until the queue is resumed. It said only "triggered".
func TestTriggerNotesPausedQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.digestSchedule(store.Unique{})
	if out := f.must("schedules", "trigger", "digest"); strings.Contains(out, "paused") {
		t.Fatalf("trigger in a running queue: %q, want no note", out)
	}
	f.must("queues", "pause", "default")
	out := f.must("schedules", "trigger", "digest")
	if !strings.HasPrefix(out, "triggered digest: job ") || !strings.Contains(out, `note: queue "default" is paused`) {
		t.Fatalf("trigger in a paused queue: %q, want the note", out)
	}
	var got triggerJSON
	out = f.must("--json", "schedules", "trigger", "digest")
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Job == "" || len(got.Paused) != 1 || got.Paused[0] != "default" {
		t.Fatalf("trigger --json in a paused queue: %q (%v), want paused_queues [default]", out, err)
	}
}
