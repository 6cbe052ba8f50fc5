package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
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
	c8, opts, first := e.holdingUnique(t)
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

// publishedBy rewrites the template of schedule name as a scheduler of an
// older release published it: without the fields drop names ("route":
// how the ticks are placed, "placed": that the template says so).
func (e *schedEnv) publishedBy(name string, drop ...string) {
	e.t.Helper()
	ctx := context.Background()
	key := keys.Schedules{NS: e.ns}.Schedule(name)
	b, err := e.rdb.HGet(ctx, key, "job").Bytes()
	if err != nil {
		e.t.Fatal(err)
	}
	var tmpl map[string]any
	if err := msgpack.Unmarshal(b, &tmpl); err != nil {
		e.t.Fatal(err)
	}
	for _, f := range drop {
		delete(tmpl, f)
	}
	if b, err = msgpack.Marshal(tmpl); err != nil {
		e.t.Fatal(err)
	}
	if err := e.rdb.HSet(ctx, key, "job", b).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// TestTriggerScheduleOldTemplate: a unique schedule on a queue of 8
// partitions whose template was published by an older scheduler, which
// did not record how its ticks are placed. Its unique key is in the
// template, but a partition key, which would go before it, is not: no
// placement can be derived. The trigger is refused with
// ErrScheduleOutdated and enqueues nothing (it was placed by its random
// ID, and ran a second job beside the one holding the key); on a queue of
// one partition, where placement is no choice, it runs. Once a scheduler
// of this release publishes the schedule again, the trigger meets the
// holder. A template of the release that recorded the route alone (no
// "placed") is followed.
func TestTriggerScheduleOldTemplate(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	_, opts, first := e.holdingUnique(t)
	nightly := flow.Schedule{Name: "nightly", Every: time.Hour, Args: report{Team: "a"}, Opts: opts}
	daily := flow.Schedule{Name: "daily", Every: time.Hour, Args: report{Team: "b"}, Opts: []flow.EnqueueOption{flow.WithUnique("daily-report", 0, flow.KeepExisting)}}
	stop := e.run(e.newScheduler(nightly, daily))
	e.wait("nightly", 1) // published
	e.wait("daily", 1)
	stop()
	ops := admin.New(e.client())
	depth := func() int64 {
		t.Helper()
		st, err := ops.QueueStats(ctx, "rep", 0)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, d := range st.Depth {
			n += d
		}
		return n
	}
	before := depth()

	e.publishedBy("nightly", "route", "placed")
	for range 8 {
		res, err := ops.TriggerSchedule(ctx, "nightly")
		if !errors.Is(err, admin.ErrScheduleOutdated) {
			t.Fatalf("trigger of a template without its placement on 8 partitions: %+v, %v; want ErrScheduleOutdated", res, err)
		}
	}
	if n := depth(); n != before {
		t.Fatalf("refused triggers added %d jobs", n-before)
	}
	// one partition: no placement to choose, once an application's
	// process has registered the queue (a trigger registers none)
	e.publishedBy("daily", "route", "placed")
	if res, err := ops.TriggerSchedule(ctx, "daily"); !errors.Is(err, admin.ErrQueueNotFound) {
		t.Fatalf("trigger of a schedule whose queue is not registered: %+v, %v; want ErrQueueNotFound", res, err)
	}
	if _, err := e.client().Enqueue(ctx, report{Team: "c"}); err != nil { // registers "default", 1 partition
		t.Fatal(err)
	}
	if res, err := ops.TriggerSchedule(ctx, "daily"); err != nil || res.ID == "" {
		t.Fatalf("trigger of a template without its placement on 1 partition: %+v, %v", res, err)
	}

	e.run(e.newScheduler(nightly))
	e.wait("nightly", 1) // published again
	// as this release publishes it, then as the release that recorded the
	// route alone did
	for _, drop := range [][]string{nil, {"placed"}} {
		e.publishedBy("nightly", drop...)
		for range 8 {
			res, err := ops.TriggerSchedule(ctx, "nightly")
			if err != nil || !res.Duplicate || res.ID != first.ID {
				t.Fatalf("trigger after the schedule was published again (without %v): %+v, %v; want a duplicate of %s", drop, res, err, first.ID)
			}
		}
	}
}

// holdingUnique makes a client that registers queue rep with 8
// partitions and enqueues through it the job that holds unique key
// nightly-report; it returns the client, the options that job was
// enqueued with (those of the schedules that meet it) and the job.
func (e *schedEnv) holdingUnique(t *testing.T) (*flow.Client, []flow.EnqueueOption, flow.Enqueued) {
	t.Helper()
	c8, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk,
		Partitions: map[string]int{"rep": 8}})
	if err != nil {
		t.Fatal(err)
	}
	opts := []flow.EnqueueOption{flow.WithQueue("rep"), flow.WithUnique("nightly-report", 0, flow.KeepExisting)}
	first, err := c8.Enqueue(context.Background(), report{Team: "a"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c8, opts, first
}
