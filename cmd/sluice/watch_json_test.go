package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestStatsWatchJSONSaysWhenRead: `queues stats --watch --json` gives
// each reading the time it was read (Redis's, "at"), as the text heads
// each block with it: a stream of readings with no time could not be told
// apart or placed. Each array was the stats alone.
func TestStatsWatchJSONSaysWhenRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.populate()
	ctx, cancel := context.WithCancel(f.ctx)
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- f.runCtx(ctx, &out, &errb, "--json", "queues", "stats", "default", "--watch", "--interval", "5s")
	}()
	f.clk.WaitTimers(1) // the first reading is out
	f.clk.Advance(5 * time.Second)
	f.clk.WaitTimers(1) // the second
	cancel()
	if code := <-done; code != exitOK || errb.Len() > 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	dec := json.NewDecoder(&out)
	var ats []time.Time
	for dec.More() {
		var reading []struct {
			Queue string     `json:"queue"`
			At    *time.Time `json:"at"`
		}
		if err := dec.Decode(&reading); err != nil {
			t.Fatalf("%v in %q", err, out.String())
		}
		if len(reading) != 1 || reading[0].At == nil {
			t.Fatalf("a reading of --watch --json: %+v, want queue default with the time it was read (at)", reading)
		}
		ats = append(ats, *reading[0].At)
	}
	if len(ats) != 2 || ats[1].Sub(ats[0]) != 5*time.Second {
		t.Fatalf("readings at %v, want two, 5s apart (the fake clock's)", ats)
	}
}
