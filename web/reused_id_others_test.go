package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRerouteOnReusedIDRefused: a reroute confirmed for a job that was
// deleted since, its ID then taken by a new job (flow.WithID), is
// refused (409) and leaves the new job, which the operator never saw,
// unpinned: the reroute form recorded nothing of the job it showed, so
// the new job was pinned to the worker and the console said "rerouted".
func TestRerouteOnReusedIDRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{Order: "old"}, flow.WithID("reused-reroute"), flow.WithDelay(time.Hour))
	ref, ok := keys.ParseRef(f.env.NS, id)
	if !ok {
		t.Fatalf("job ID %q", id)
	}
	st := store.New(f.env.RDB, store.Config{NS: f.env.NS})
	lay, err := st.ReadLayout(ctx, ref.Partition.Queue)
	testkit.Must(t, err)
	testkit.Must(t, st.Heartbeat(ctx, sluicetype.WorkerInfo{ID: "worker-b", Queues: map[string]int{ref.Partition.Queue: lay.Partitions}}, time.Minute))
	c := client()
	code, body := f.get(c, "/confirm/reroute?id="+url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, mainOf(body))
	}
	form := hiddenFields(body)
	form.Set("worker", "worker-b")
	form.Set("policy", "wait")
	testkit.Must(t, f.ops.DeleteJob(ctx, id))
	if id2 := f.enqueue(work{Order: "new"}, flow.WithID("reused-reroute"), flow.WithDelay(time.Hour)); id2 != id {
		t.Fatalf("new job %s, old %s: not the same ID", id2, id)
	}
	code, _, body = f.post(c, "/act/reroute", form)
	sw, err := f.env.RDB.HGet(ctx, ref.Job(ref.Local), keys.FieldStickyWorker).Result()
	if code != http.StatusConflict || err != redis.Nil {
		t.Errorf("reroute confirmed for the deleted job: POST %d, the new job with its ID prefers %q (%v); want 409 and it untouched\n%s",
			code, sw, err, mainOf(body))
	}
}

// TestDiscardSignalOnReusedIDRefused: a discard confirmed for a signal of
// a job that was deleted since, its ID then taken by a new job that was
// sent a signal of the same name, is refused (409) and leaves the new
// job's signal kept: the form recorded the signal's sequence number,
// which the new job's first signal has again, and nothing of the job.
func TestDiscardSignalOnReusedIDRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(work{Order: "old"}, flow.WithID("reused-discard"), flow.WithDelay(time.Hour))
	_, err := f.ops.Signal(ctx, id, "approve", "old")
	testkit.Must(t, err)
	c := client()
	code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode())
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, mainOf(body))
	}
	form := hiddenFields(body)
	testkit.Must(t, f.ops.DeleteJob(ctx, id))
	if id2 := f.enqueue(work{Order: "new"}, flow.WithID("reused-discard"), flow.WithDelay(time.Hour)); id2 != id {
		t.Fatalf("new job %s, old %s: not the same ID", id2, id)
	}
	_, err = f.ops.Signal(ctx, id, "approve", "new")
	testkit.Must(t, err)
	code, _, body = f.post(c, "/act/discard-signal", form)
	if kept := f.kept(id); code != http.StatusConflict || kept != "approve #1" {
		t.Errorf("discard confirmed for the deleted job: POST %d, the new job keeps %q; want 409 and approve #1 kept\n%s", code, kept, mainOf(body))
	}
}

// TestDiscardSignalOnIDReusedMidCallRefused: the job is deleted and its
// ID given to a new job, sent a signal of the same name, after the
// console checked the job the confirmation showed and before its
// discard. The discard is refused (409) by its own script call, which
// names the creation time, and the new job keeps its signal #1 (a second
// read of the job found the new one, numbering its signals from 1 again).
func TestDiscardSignalOnIDReusedMidCallRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := &racingOps{}
	f := newFixture(t, Options{ops: r}, false)
	r.ops = adminOps{Client: f.ops}
	id := f.enqueue(work{Order: "old"}, flow.WithID("reused-mid-discard"), flow.WithDelay(time.Hour))
	_, err := f.ops.Signal(ctx, id, "approve", "old")
	testkit.Must(t, err)
	c := client()
	code, body := f.get(c, "/confirm/discard-signal?"+url.Values{"id": {id}, "signal": {"approve"}, "seq": {"1"}}.Encode())
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, mainOf(body))
	}
	form := hiddenFields(body)
	r.before = func() {
		if err := f.ops.DeleteJob(ctx, id); err != nil {
			t.Errorf("deleting the job: %v", err)
		}
		if _, err := f.env.Client.Enqueue(ctx, work{Order: "new"}, flow.WithQueue(testQueue), flow.WithID("reused-mid-discard"), flow.WithDelay(time.Hour)); err != nil {
			t.Errorf("the new job: %v", err)
		}
		if _, err := f.ops.Signal(ctx, id, "approve", "new"); err != nil {
			t.Errorf("the new job's signal: %v", err)
		}
	}
	r.armed.Store(true)
	code, _, body = f.post(c, "/act/discard-signal", form)
	if kept := f.kept(id); code != http.StatusConflict || kept != "approve #1" {
		t.Errorf("discard confirmed for the job deleted mid-call: POST %d, the new job keeps %q; want 409 and approve #1 kept\n%s", code, kept, mainOf(body))
	}
}
