package admin_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
)

// TestQueuesLive: the live counters of a queue of two partitions sum both
// partitions' per-state counts, what finished this minute, and the paused
// partitions, one call per partition; QueueHistory puts the
// minute's completions in the last minute.
func TestQueuesLive(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"live": 2})
	for range 6 {
		a.enqueue(email{To: "x"}, flow.WithQueue("live"))
	}
	if n := a.finish("live", 2, time.Second, store.Ack{Code: store.CodeOK}); n != 6 {
		t.Fatalf("finished %d", n)
	}
	for range 3 {
		a.enqueue(email{To: "y"}, flow.WithQueue("live"))
	}
	if err := a.ops.PauseQueue(a.ctx, "live"); err != nil {
		t.Fatal(err)
	}
	full, err := a.ops.QueuesLive(a.ctx, map[string]int{"live": 0})
	if err != nil {
		t.Fatal(err)
	}
	want := []admin.QueueLive{{
		Queue: "live", Partitions: 2, Paused: 2,
		Depth: map[string]int64{"scheduled": 0, "available": 3, "running": 0, "retryable": 0, "completed": 6,
			"archived": 0, "quarantined": 0, "cancelled": 0},
		Minute: a.clk.Now().Truncate(time.Minute), Finished: map[string]int64{"completed": 6}, Previous: map[string]int64{},
	}}
	if d := cmp.Diff(want, full, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); d != "" {
		t.Errorf("full read (-want +got):\n%s", d)
	}
	hist, err := a.ops.QueueHistory(a.ctx, "live", 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 || hist[2].Finished["completed"] != 6 || len(hist[0].Finished) != 0 || !hist[2].Minute.Equal(want[0].Minute) {
		t.Errorf("history: %+v", hist)
	}
	for _, bad := range []int{0, 121} {
		if _, err := a.ops.QueueHistory(a.ctx, "live", 0, bad); err == nil {
			t.Errorf("QueueHistory of %d minutes: no error", bad)
		}
	}
	a.clk.Advance(time.Minute) // the next minute: this one's counts come as Previous
	next, err := a.ops.QueuesLive(a.ctx, map[string]int{"live": 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(next[0].Finished) != 0 || next[0].Previous["completed"] != 6 || !next[0].Minute.Equal(want[0].Minute.Add(time.Minute)) {
		t.Errorf("a minute later: minute %v, finished %v, previous %v", next[0].Minute, next[0].Finished, next[0].Previous)
	}
	if _, err := a.ops.QueuesLive(a.ctx, map[string]int{"bad queue!": 1}); err == nil {
		t.Error("QueuesLive of an invalid queue name: no error")
	}
}

// TestJobBriefsAndExtras: briefs follow a job's state and counters, give
// its creation time as Job does (kept by a job of a given ID, carried by
// a generated one) and say when it is gone; extras decode its headers.
func TestJobBriefsAndExtras(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "z"}, flow.WithHeaders(map[string]string{"tenant": "acme"}))
	given := a.enqueue(email{To: "y"}, flow.WithID("given-id"))
	gone := "default:0:nope"
	bs, err := a.ops.JobBriefs(a.ctx, []string{id, given, gone})
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]time.Time{}
	for _, j := range []string{id, given} {
		info, err := a.ops.Job(a.ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		created[j] = info.Created
	}
	want := map[string]admin.JobBrief{id: {State: "available", Created: created[id]}, given: {State: "available", Created: created[given]}, gone: {}}
	if d := cmp.Diff(want, bs); d != "" {
		t.Errorf("briefs (-want +got):\n%s", d)
	}
	a.finish("default", 1, time.Second, failAck)
	bs, err = a.ops.JobBriefs(a.ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if b := bs[id]; b.State != "retryable" || b.Attempt != 1 || b.Fence != 1 {
		t.Errorf("brief after a failed attempt: %+v", b)
	}
	if _, err := a.ops.JobBriefs(a.ctx, []string{"no-colons"}); err == nil {
		t.Error("JobBriefs of a malformed ID: no error")
	}
	x, err := a.ops.JobExtras(a.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(admin.JobExtras{Headers: map[string]string{"tenant": "acme"}}, x); d != "" {
		t.Errorf("extras (-want +got):\n%s", d)
	}
	if _, err := a.ops.JobExtras(a.ctx, gone); err == nil {
		t.Error("JobExtras of a missing job: no error")
	}
}
