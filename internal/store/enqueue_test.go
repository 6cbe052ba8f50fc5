package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestEnqueueIdempotentID: the same ID with the same content is a no-op,
// with other content a conflict; neither touches the existing job.
func TestEnqueueIdempotentID(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "order-1", Kind: "charge", Payload: []byte("a")})
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{
				{Local: "order-1", Kind: "charge", Payload: []byte("a"), MaxAttempts: 3},
				{Local: "order-1", Kind: "charge", Payload: []byte("b"), MaxAttempts: 3},
				{Local: "order-1", Kind: "refund", Payload: []byte("a"), MaxAttempts: 3},
			})
			if err != nil {
				t.Fatal(err)
			}
			var sts []store.EnqueueStatus
			for _, r := range res {
				sts = append(sts, r.Status)
			}
			if diff := cmp.Diff([]store.EnqueueStatus{store.Duplicate, store.Conflicted, store.Conflicted}, sts); diff != "" {
				t.Fatalf("statuses (-want +got):\n%s", diff)
			}
			if res[0].Err != nil || !errors.Is(res[1].Err, store.ErrConflict) || !errors.Is(res[2].Err, store.ErrConflict) {
				t.Fatalf("results %+v", res)
			}
			if order := f.availableOrder(0); len(order) != 1 {
				t.Fatalf("available %v, want the job once", order)
			}
			got, _ := f.get("order-1")
			if got.Kind != "charge" || string(got.Payload) != "a" {
				t.Fatalf("existing job changed: %+v", got)
			}
		})
	}
}

// TestEnqueueSameIDInOneCall: jobs of one call that share an ID no job had
// before it are checked against the first: the same content is a no-op,
// other content a conflict, and a generated ID drawn twice adds the second
// job under another ID. Each job is listed once.
func TestEnqueueSameIDInOneCall(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{
				{Local: "order-2", Kind: "charge", Payload: []byte("a"), MaxAttempts: 3},
				{Local: "order-2", Kind: "charge", Payload: []byte("a"), MaxAttempts: 3},
				{Local: "order-2", Kind: "charge", Payload: []byte("b"), MaxAttempts: 3},
				{Local: "drawn", Generated: true, Kind: "k", Payload: []byte("first"), MaxAttempts: 3},
				{Local: "drawn", Generated: true, Kind: "k", Payload: []byte("second"), MaxAttempts: 3},
			})
			if err != nil {
				t.Fatal(err)
			}
			var sts []store.EnqueueStatus
			for _, r := range res {
				sts = append(sts, r.Status)
			}
			want := []store.EnqueueStatus{store.Added, store.Duplicate, store.Conflicted, store.Added, store.Added}
			if diff := cmp.Diff(want, sts); diff != "" {
				t.Fatalf("statuses (-want +got):\n%s", diff)
			}
			if res[3].Local != "" || !strings.HasPrefix(res[4].Local, "drawn-") {
				t.Fatalf("generated IDs: %+v, %+v; want the second under a new ID", res[3], res[4])
			}
			for id, want := range map[string]string{"order-2": "a", "drawn": "first", res[4].Local: "second"} {
				if j, _ := f.get(id); string(j.Payload) != want {
					t.Errorf("job %s has payload %q, want %q", id, j.Payload, want)
				}
			}
			if order := f.availableOrder(0); len(order) != 3 {
				t.Errorf("available %v, want each of the 3 jobs once", order)
			}
			if got := f.stats()["available"]; got != 3 {
				t.Errorf("%d jobs counted available, want 3", got)
			}
		})
	}
}

// TestDelayedJobs: delayed and run-at jobs wait in the schedule, claims
// report the next due time, and become claimable once due.
func TestDelayedJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "later", Delay: time.Minute},
				store.NewJob{Local: "at", RunAt: epoch.Add(30 * time.Second)})
			// both are due further ahead than the sched zset holds: each
			// waits in a bucket of later jobs, and a claim answers when the
			// first bucket moves into sched, a bucket's width before its start
			res := f.claim(5, "w")
			if len(res.Jobs) != 0 || !res.Dry || !dueAt(res, f.clk.Now()).Equal(epoch.Add(25*time.Second)) {
				t.Fatalf("claim before due = %+v", res)
			}
			got, _ := f.get("later")
			if got.State != "scheduled" || !got.RunAt.Equal(epoch.Add(time.Minute)) {
				t.Fatalf("delayed job: %+v", got)
			}
			f.clk.Advance(25 * time.Second)
			res = f.claim(5, "w") // moves "at" into sched: its exact due time
			if len(res.Jobs) != 0 || !dueAt(res, f.clk.Now()).Equal(epoch.Add(30*time.Second)) {
				t.Fatalf("claim at 25s = %+v", res)
			}
			f.clk.Advance(5 * time.Second)
			res = f.claim(5, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "at" || !dueAt(res, f.clk.Now()).Equal(epoch.Add(55*time.Second)) {
				t.Fatalf("claim at 30s = %+v", res)
			}
			f.clk.Advance(30 * time.Second)
			if n, err := f.promote(10); err != nil || n != 1 {
				t.Fatalf("promote = %d, %v", n, err)
			}
			if got, _ := f.get("later"); got.State != "available" || !got.RunAt.IsZero() {
				t.Fatalf("promoted job: %+v", got)
			}
			if res := f.claim(5, "w"); len(res.Jobs) != 1 || res.Jobs[0].Local != "later" || res.Scheduled {
				t.Fatalf("claim after the last promotion = %+v", res)
			}
		})
	}
}

// TestPriority: higher priorities are claimed first, FIFO within one.
func TestPriority(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "low1"}, store.NewJob{Local: "high1", Priority: 9},
				store.NewJob{Local: "mid", Priority: 4}, store.NewJob{Local: "low2"}, store.NewJob{Local: "high2", Priority: 9})
			var order []string
			for _, j := range f.claim(10, "w").Jobs {
				order = append(order, j.Local)
			}
			if diff := cmp.Diff([]string{"high1", "high2", "mid", "low1", "low2"}, order); diff != "" {
				t.Fatalf("claim order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeadlineAtClaim: a job whose deadline passed while it waited is
// archived instead of run.
func TestDeadlineAtClaim(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "late", Deadline: epoch.Add(time.Second)}, store.NewJob{Local: "fine"})
			f.clk.Advance(2 * time.Second)
			res := f.claim(5, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "fine" {
				t.Fatalf("claimed %+v", res.Jobs)
			}
			if diff := cmp.Diff([]store.Parked{{Local: "late", Reason: "deadline_exceeded"}}, res.Parked); diff != "" {
				t.Fatalf("parked (-want +got):\n%s", diff)
			}
			if got, _ := f.get("late"); got.State != "archived" || got.Reason != "deadline_exceeded" {
				t.Fatalf("late job: %+v", got)
			}
		})
	}
}

// TestStatsCounters: per-state counters follow every transition.
func TestStatsCounters(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c", Delay: time.Hour})
			j := f.claimOne("w")
			f.ack(j, store.Ack{Code: store.CodeOK})
			f.claimOne("w")
			got, err := f.rdb.HGetAll(f.ctx, f.p.Stats()).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"available": "0", "running": "1", "completed": "1", "scheduled": "1"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlainJobShortcut: enqueue.lua writes a plain job (every option at
// its default) by a shortcut; the job it writes is the one the general
// path writes for the same job with one option set (max attempts, whose
// field is then dropped from the comparison): the same fields, in list 0,
// counted available. Short, chunked and body-sized payloads; IDs whose
// time is the store's, is not (created time stored), or was chosen by the
// caller.
func TestPlainJobShortcut(t *testing.T) {
	t.Parallel()
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		return b
	}
	ids := map[string]func(f *fixture) (string, bool){
		"fresh ID":    func(f *fixture) (string, bool) { return f.st.NewLocal(), true },
		"hour-old ID": func(f *fixture) (string, bool) { return keys.NewLocalAt(epoch.Add(-time.Hour)), true },
		"caller's ID": func(f *fixture) (string, bool) { return keys.NewLocal() + "-mine", false },
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var want []string
			for name, id := range ids {
				for _, n := range []int{10, 200, 1000} {
					plain, gen := id(f)
					other, _ := id(f)
					f.enqueue(store.NewJob{Local: plain, Generated: gen, Kind: "k", Payload: payload(n), MaxAttempts: store.DefaultMaxAttempts},
						store.NewJob{Local: other, Generated: gen, Kind: "k", Payload: payload(n), MaxAttempts: 24})
					want = append(want, plain, other)
					got := f.rdb.HGetAll(f.ctx, f.p.Job(plain)).Val()
					general := f.rdb.HGetAll(f.ctx, f.p.Job(other)).Val()
					delete(general, keys.FieldMaxAttempts)
					if diff := cmp.Diff(general, got); diff != "" || len(got) == 0 {
						t.Errorf("%s, %d-byte payload: plain job's hash differs from the general path's (-general +plain):\n%s", name, n, diff)
					}
					pb, _ := f.rdb.Get(f.ctx, f.p.Body(plain)).Result()
					ob, _ := f.rdb.Get(f.ctx, f.p.Body(other)).Result()
					if pb != ob {
						t.Errorf("%s, %d-byte payload: body key %d bytes, general path's %d", name, n, len(pb), len(ob))
					}
				}
			}
			if got := f.availableOrder(0); !cmp.Equal(got, want) {
				t.Errorf("list 0 = %v, want %v", got, want)
			}
			if s := f.stats(); s["available"] != int64(len(want)) {
				t.Errorf("stats = %v, want %d available", s, len(want))
			}
		})
	}
}
