package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/store"
)

// TestTriggerNotesPausedQueue: `schedules trigger` of a schedule whose
// queue is paused says so, in text (a note) and in --json
// (paused_queues), as run-now, redrive and release do: the job it added
// waits until the queue is resumed. It said only "triggered".
func TestTriggerNotesPausedQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tmpl, err := msgpack.Marshal(store.ScheduleJob{
		NewJob: store.NewJob{Kind: "email", Payload: []byte{0x80}, MaxAttempts: 3},
		Route:  "digest", Placed: true})
	if err != nil {
		t.Fatal(err)
	}
	def := store.ScheduleDef{Name: "digest", Every: time.Hour, Missed: "skip", Grace: time.Minute, Queue: "default", Kind: "email", Template: tmpl}
	if err := f.st.PublishSchedule(f.ctx, def); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.RegisterLayout(f.ctx, "default", 1); err != nil {
		t.Fatal(err)
	}
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
