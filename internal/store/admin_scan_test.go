package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// scan runs a redrive scan to its end and returns the matches.
func (f *fixture) scan(sel store.Selector, batch int, dry bool, between func(step int)) (matched, steps int) {
	f.t.Helper()
	var cur store.ScanCursor
	for {
		st, err := f.st.RedriveStep(f.ctx, f.p, sel, cur, batch, dry)
		if err != nil {
			f.t.Fatal(err)
		}
		matched += st.Matched
		steps++
		cur = st.Cursor
		if st.Done {
			return matched, steps
		}
		if between != nil {
			between(steps)
		}
	}
}

// TestRedriveScan: a scan in small batches over jobs that all share one
// score (archived in the same millisecond) finds every match once, the dry
// run counts what the real run moves, and jobs that finish after the scan
// began are not taken.
func TestRedriveScan(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 23 {
				kind := "a"
				if i%3 == 0 {
					kind = "b"
				}
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%02d", i), Kind: kind, MaxAttempts: 1})
			}
			f.enqueue(jobs...)
			for range jobs {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"})
			}
			sel := store.Selector{State: "archived", Kind: "a"}
			dry, _ := f.scan(sel, 4, true, nil)
			if dry != 15 {
				t.Fatalf("dry run matched %d, want 15", dry)
			}
			late := func(step int) {
				if step == 2 { // a job of kind a archived after the scan began
					f.clk.Advance(time.Millisecond)
					f.archive("late")
				}
			}
			got, steps := f.scan(sel, 4, false, late)
			if got != dry || steps < 6 {
				t.Fatalf("real run moved %d in %d steps, want %d in at least 6", got, steps, dry)
			}
			if d := cmp.Diff(map[string]int64{"available": 15, "archived": 9}, f.stats()); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
			if again, _ := f.scan(sel, 4, true, nil); again != 1 { // only "late" is left of kind a
				t.Fatalf("second dry run matched %d, want 1", again)
			}
			if n, _ := f.scan(store.Selector{State: "archived", Reason: "skipped"}, 100, true, nil); n != 0 {
				t.Fatalf("reason filter matched %d", n)
			}
			if n, _ := f.scan(store.Selector{State: "archived", Before: epoch}, 100, true, nil); n != 0 {
				t.Fatalf("time filter matched %d", n)
			}
		})
	}
}

// TestList: pages in each state's order, skipping stale entries.
func TestList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			for _, l := range []string{"d1", "d2", "d3"} {
				f.clk.Advance(time.Second)
				f.archive(l)
			}
			f.enqueue(store.NewJob{Local: "lo1"}, store.NewJob{Local: "hi", Priority: 5}, store.NewJob{Local: "lo2"},
				store.NewJob{Local: "gone"}, store.NewJob{Local: "lo3", Kind: "other"})
			if _, err := f.st.Cancel(f.ctx, f.ref("gone"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"hi", "lo3", "lo2", "lo1"}, f.listAll("available", 2)); d != "" {
				t.Fatalf("available (-want +got):\n%s", d)
			}
			page, err := f.st.List(f.ctx, f.p, "available", "", 10, 100, "other")
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Job.Kind != "other" || page.Next != "" {
				t.Fatalf("kind filter: %+v, %v", page, err)
			}
			page, err = f.st.List(f.ctx, f.p, "archived", "", 2, 100, "")
			if err != nil || len(page.Entries) != 2 || page.Entries[0].Job.Local != "d3" || page.Entries[1].Job.Local != "d2" {
				t.Fatalf("archived page 1: %+v, %v", page, err)
			}
			j := page.Entries[0].Job
			if j.Attempt != 1 || j.Reason != "attempts_exhausted" || j.LastError != "boom" || j.Finished.IsZero() {
				t.Fatalf("listed job: %+v", j)
			}
			page, err = f.st.List(f.ctx, f.p, "archived", page.Next, 2, 100, "")
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Job.Local != "d1" {
				t.Fatalf("archived page 2: %+v, %v", page, err)
			}
			// a budget smaller than the stale run still makes progress
			page, err = f.st.List(f.ctx, f.p, "cancelled", "", 5, 1, "")
			if err != nil || len(page.Entries) != 1 || page.Entries[0].Job.Local != "gone" {
				t.Fatalf("cancelled: %+v, %v", page, err)
			}
		})
	}
}

// TestMinuteCounters: finishing jobs counts them per minute, with the run
// time of completed attempts: from the lease start the ack gives
// (Ack.Started), in both forms of an outcome, or else from the job's.
func TestMinuteCounters(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			j := f.claimOne("w")
			f.clk.Advance(100 * time.Millisecond)
			f.ack(j, store.Ack{Code: store.CodeOK}) // the job's lease start: 100 ms
			f.enqueue(store.NewJob{Local: "c"}, store.NewJob{Local: "d"})
			c, d := f.claimOne("w"), f.claimOne("w")
			f.clk.Advance(100 * time.Millisecond)
			// as given, not the job's: 1 s (a result: the outcome's full form) and 10 s
			f.ack(c, store.Ack{Code: store.CodeOK, Data: []byte("r"), Started: f.clk.Now().Add(-time.Second)})
			f.ack(d, store.Ack{Code: store.CodeOK, Started: f.clk.Now().Add(-10 * time.Second)})
			f.archive("b")
			m := f.clk.Now().UnixMilli() / 60000
			got, err := f.st.Minutes(f.ctx, []keys.Partition{f.p}, m-1, m)
			if err != nil {
				t.Fatal(err)
			}
			want := []store.Minute{
				{Finished: map[string]int64{}, RunTimes: map[int]int64{}},
				// 4*log2(101) = 26.6, 4*log2(1001) = 39.9, 4*log2(10001) = 53.2
				{Finished: map[string]int64{"completed": 3, "archived": 1}, RunTimes: map[int]int64{26: 1, 39: 1, 53: 1}},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("minutes (-want +got):\n%s", d)
			}
			if ttl := f.rdb.PTTL(f.ctx, f.p.Minute(m)).Val(); ttl <= time.Hour || ttl > 2*time.Hour {
				t.Fatalf("minute hash TTL %s", ttl)
			}
		})
	}
}

// TestMinuteTallyExpires: a minute's tally gets its expiry when a call
// creates it, keeps it through the minute's later calls (which no longer
// set it), and a tally of another type, set aside, starts anew with one.
func TestMinuteTallyExpires(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			m := f.clk.Now().UnixMilli() / 60000
			mk := f.p.Minute(m)
			expires := func(when string) {
				t.Helper()
				if ttl := f.rdb.PTTL(f.ctx, mk).Val(); ttl <= time.Hour || ttl > 2*time.Hour {
					t.Fatalf("%s: minute hash TTL %s, want 1h..2h", when, ttl)
				}
			}
			complete := func(local string) {
				t.Helper()
				f.enqueue(store.NewJob{Local: local})
				if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}); r.State != "completed" {
					t.Fatalf("ack %s: %+v", local, r)
				}
			}
			complete("a")
			expires("the minute's first call")
			complete("b") // the same fields: no new one
			expires("a later call")
			if n := f.rdb.HGet(f.ctx, mk, "completed").Val(); n != "2" {
				t.Fatalf("completed this minute: %q, want 2", n)
			}
			f.rdb.Del(f.ctx, mk)
			f.rdb.RPush(f.ctx, mk, "x") // another type: set aside
			complete("c")
			expires("a tally begun anew")
			if n := f.rdb.HGet(f.ctx, mk, "completed").Val(); n != "1" {
				t.Fatalf("completed in the new tally: %q, want 1", n)
			}
		})
	}
}

// TestWorkerRegistry: heartbeats register workers with the data model of
// their release, a worker whose entry expired is pruned, and
// unregistering removes one.
func TestWorkerRegistry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			w := sluicetype.WorkerInfo{ID: "w1", Host: "h", PID: 7, Started: epoch, Queues: map[string]int{"q": 2, "r": 1},
				QueueVersions: map[string]int64{"q": 3, "r": 1}, Concurrency: 4, Jobs: []string{"q:0:a", "q:1:b"}}
			for _, id := range []string{"w1", "w2"} {
				w.ID = id
				if err := f.st.Heartbeat(f.ctx, w, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			ws := keys.Workers{NS: f.st.NS()}
			if err := f.rdb.Del(f.ctx, ws.Worker("w2")).Err(); err != nil { // as if it expired
				t.Fatal(err)
			}
			got, err := f.st.Workers(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			w.ID, w.LastSeen = "w1", epoch
			w.DataModel = store.DataModel // registered by the store: this release's, whatever w said
			if d := cmp.Diff([]sluicetype.WorkerInfo{w}, got); d != "" {
				t.Fatalf("workers (-want +got):\n%s", d)
			}
			// a worker of a release that registered no model reads as model 0
			f.rdb.HDel(f.ctx, ws.Worker("w1"), "dm")
			if got, err := f.st.Workers(f.ctx); err != nil || len(got) != 1 || got[0].DataModel != 0 {
				t.Fatalf("a worker registered without a model: %+v, %v", got, err)
			}
			if n := f.rdb.ZCard(f.ctx, ws.Live()).Val(); n != 1 {
				t.Fatalf("%d workers left in the zset, want 1", n)
			}
			if ttl := f.rdb.PTTL(f.ctx, ws.Worker("w1")).Val(); ttl <= 0 || ttl > time.Minute {
				t.Fatalf("worker hash TTL %s", ttl)
			}
			// an older process of the ID, stopping after w1 started,
			// leaves w1's entry
			w.ID, w.Started = "w1", epoch.Add(-time.Hour)
			if err := f.st.Unregister(f.ctx, w); err != nil {
				t.Fatal(err)
			}
			if got, err := f.st.Workers(f.ctx); err != nil || len(got) != 1 {
				t.Fatalf("after an older process of w1 unregistered: %v, %v", got, err)
			}
			w.Started = epoch
			if err := f.st.Unregister(f.ctx, w); err != nil {
				t.Fatal(err)
			}
			if got, err := f.st.Workers(f.ctx); err != nil || len(got) != 0 {
				t.Fatalf("after unregister: %v, %v", got, err)
			}
		})
	}
}
