package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// listAll pages through a partition's jobs in state, n per page.
func (f *fixture) listAll(state string, n int) []string {
	f.t.Helper()
	var got []string
	for cur, pages := "", 0; ; pages++ {
		page, err := f.st.List(f.ctx, f.p, state, cur, n, 100, "")
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range page.Entries {
			got = append(got, e.Job.Local)
		}
		if cur = page.Next; cur == "" {
			return got
		}
		if pages > 50 {
			f.t.Fatalf("listing %s does not end: %v", state, got)
		}
	}
}

// TestLaterBuckets: jobs due further ahead than the sched zset holds wait
// in buckets of later jobs; claims move each bucket into sched before its
// jobs are due, so each runs at its exact due time; a job that leaves its
// bucket early (cancel, run-now, a reschedule) leaves a stale entry that
// changes nothing; listings and scans by selector see every scheduled job
// once, wherever it is indexed.
func TestLaterBuckets(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "near", Delay: 2 * time.Second},
				store.NewJob{Local: "h1", Delay: time.Hour}, store.NewJob{Local: "h1b", Delay: time.Hour + time.Millisecond},
				store.NewJob{Local: "h2", Delay: 2 * time.Hour}, store.NewJob{Local: "gone", Delay: time.Hour},
				store.NewJob{Local: "now", Delay: time.Hour}, store.NewJob{Local: "w"})
			f.suspend(f.claimOne("w"), &sluicetype.SuspendedError{Signals: []string{"go"}}) // due FAR: stays in sched
			if n, err := f.rdb.ZCard(f.ctx, f.p.Sched()).Result(); err != nil || n != 2 {
				t.Fatalf("sched holds %d entries (%v), want 2: near and the signal wait", n, err)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("gone"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.RunNow(f.ctx, f.ref("now")); err != nil {
				t.Fatal(err)
			}
			idx, err := store.SchedIndex(f.ctx, f.rdb, f.p)
			if err != nil {
				t.Fatal(err)
			}
			ms := func(d time.Duration) int64 { return epoch.Add(d).UnixMilli() }
			want := map[string]int64{"near": ms(2 * time.Second), "h1": ms(time.Hour), "h1b": ms(time.Hour + time.Millisecond),
				"h2": ms(2 * time.Hour), "w": store.NeverDue}
			if d := cmp.Diff(want, idx); d != "" {
				t.Fatalf("scheduled index (-want +got):\n%s", d)
			}
			// highest due first; in a bucket, the last put there first
			for _, n := range []int{1, 2, 10} {
				if d := cmp.Diff([]string{"w", "h2", "h1b", "h1", "near"}, f.listAll("scheduled", n)); d != "" {
					t.Fatalf("scheduled, %d per page (-want +got):\n%s", n, d)
				}
			}
			if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 2, true); n != 5 {
				t.Fatalf("a dry scan of the scheduled index counted %d, want 5", n)
			}

			// each job runs at its exact due time, its bucket moved into
			// sched by the claims before it
			f.claimOne("w1") // "now"
			for _, c := range []struct {
				at  time.Duration
				job string
			}{{2 * time.Second, "near"}, {time.Hour, "h1"}, {time.Hour + time.Millisecond, "h1b"}, {2 * time.Hour, "h2"}} {
				for {
					res := f.claim(5, "w1")
					if len(res.Jobs) > 0 {
						if got := res.Jobs[0].Local; len(res.Jobs) != 1 || got != c.job || !f.clk.Now().Equal(epoch.Add(c.at)) {
							t.Fatalf("claimed %v at %v, want %s at %v", res.Jobs, f.clk.Now().Sub(epoch), c.job, c.at)
						}
						break
					}
					if due := dueAt(res, f.clk.Now()); due.IsZero() || due.After(epoch.Add(c.at)) {
						t.Fatalf("at %v the claim's next due is %v, past %s's due time %v", f.clk.Now().Sub(epoch), due, c.job, c.at)
					}
					f.clk.Advance(res.NextDue)
				}
			}
			if n, err := f.rdb.Exists(f.ctx, f.p.Later()).Result(); err != nil || n != 0 {
				t.Fatalf("buckets left once every job ran: %d %v", n, err)
			}
			f.wantStats(map[string]string{"scheduled": "1", "running": "5", "cancelled": "1"})
		})
	}
}

// duplicate enqueues j, a duplicate of a job whose unique key it has.
func (f *fixture) duplicate(j store.NewJob) {
	f.t.Helper()
	j.Kind, j.Payload, j.MaxAttempts = "k", []byte("x"), 3
	res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{j})
	if err != nil || res[0].Status != store.Held {
		f.t.Fatalf("duplicate %s: %+v, %v", j.Local, res, err)
	}
}

// TestLaterBucketReschedule: a job put off from one bucket to a later
// one (a debounced duplicate) runs at its new due time, not its old; a job
// brought forward from a bucket into sched runs at its new time once.
func TestLaterBucketReschedule(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour, Unique: uq})
			f.duplicate(store.NewJob{Local: "j2", Delay: 2 * time.Hour, Unique: uq}) // j, due in 2h
			f.enqueue(store.NewJob{Local: "k", Delay: time.Hour, Unique: store.Unique{Key: "k", OnDuplicate: "debounce"}})
			f.clk.Advance(time.Hour - 3*time.Second)
			f.duplicate(store.NewJob{Local: "k2", Delay: 2 * time.Second, Unique: store.Unique{Key: "k", OnDuplicate: "debounce"}})
			f.clk.Advance(2 * time.Second)
			if res := f.claim(5, "w"); len(res.Jobs) != 1 || res.Jobs[0].Local != "k" {
				t.Fatalf("claim when k was brought forward to: %+v", res)
			}
			f.clk.Advance(time.Second)
			if res := f.claim(5, "w"); len(res.Jobs) != 0 {
				t.Fatalf("claim at j's first due time (and k's): %+v", res)
			}
			if at, ok := f.due("j"); !ok || at != float64(epoch.Add(2*time.Hour).UnixMilli()) {
				t.Fatalf("j is due at %v (%v), want at 2h", at, ok)
			}
			f.clk.Advance(time.Hour)
			if res := f.claim(5, "w"); len(res.Jobs) != 1 || res.Jobs[0].Local != "j" {
				t.Fatalf("claim at 2h: %+v", res)
			}
		})
	}
}
