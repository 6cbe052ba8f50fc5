package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestTriggerScheduleKeepsUniqueKey: a schedule whose jobs are unique
// (WithUnique) in a queue of 8 partitions. While one of its jobs is active
// and holds the unique key, an operator's TriggerSchedule must meet that
// job (Duplicate/Unique), as the schedule's own ticks and Client.Enqueue
// with the same options do. TriggerSchedule routed the job by its fresh
// random ID instead, so it landed on another partition, where the unique
// key is not held, and a second job ran beside the first; the trigger
// reported a new job, no error.
func TestTriggerScheduleKeepsUniqueKey(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	// the queue is registered with 8 partitions
	c8, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk,
		Partitions: map[string]int{"rep": 8}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []flow.EnqueueOption{flow.WithQueue("rep"), flow.WithUnique("nightly-report", 0, flow.KeepExisting)}
	first, err := c8.Enqueue(ctx, report{Team: "a"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.run(e.newScheduler(flow.Schedule{Name: "nightly", Every: time.Hour, Args: report{Team: "a"}, Opts: opts}))
	e.wait("nightly", 1) // published

	// the same options through the client meet the holder
	again, err := c8.Enqueue(ctx, report{Team: "a"}, opts...)
	if err != nil || again.ID != first.ID || !again.Duplicate {
		t.Fatalf("enqueue again: %+v, %v (want a duplicate of %s)", again, err, first.ID)
	}
	ops := admin.New(e.client())
	extra := map[string]bool{}
	for range 8 {
		res, err := ops.TriggerSchedule(ctx, "nightly")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Duplicate || res.ID != first.ID {
			extra[res.ID] = true
		}
	}
	if len(extra) > 0 {
		t.Fatalf("while %s holds unique key nightly-report, TriggerSchedule added %d more jobs of the unique schedule (one per other partition it drew): %v",
			first.ID, len(extra), extra)
	}
}
