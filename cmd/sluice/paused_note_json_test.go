package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestRunNowJSONNamesPausedQueues: `jobs run-now --json` of a job in a
// paused queue says the queue is paused, as the text output's note does
// (its jobs wait until it is resumed). The JSON said nothing: a script
// could not tell the job would not run.
func TestRunNowJSONNamesPausedQueues(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.enqueue("d1", email{To: "x"}, flow.WithDelay(time.Hour))
	f.must("queues", "pause", "default")
	var got struct {
		Available []string `json:"available"`
		Paused    []string `json:"paused_queues"`
	}
	out := f.must("--json", "jobs", "run-now", id)
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Available) != 1 || len(got.Paused) != 1 || got.Paused[0] != "default" {
		t.Fatalf("run-now --json in a paused queue: %q (%v), want paused_queues [default]", out, err)
	}
}
