package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestQuarantineHold: while a job is quarantined, a job with its
// fingerprint is added held (never due, naming it); other jobs run. A
// release, or the quarantined job's deletion, lets the held ones run.
func TestQuarantineHold(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			quarantine := func(local string) {
				t.Helper()
				f.enqueue(store.NewJob{Local: local, Hold: "fp"})
				for range 3 {
					f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
					f.clk.Advance(time.Minute)
				}
				if j, _ := f.get(local); j.State != "quarantined" {
					t.Fatalf("%s is %s, want quarantined", local, j.State)
				}
			}
			hold := func(local, by string) {
				t.Helper()
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: local, Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
				if err != nil || res[0].Status != store.Added || res[0].HeldBy != by {
					t.Fatalf("enqueue %s: %+v %v, want added held by %s", local, res, err, by)
				}
				if j, _ := f.get(local); j.State != "scheduled" || j.HeldBy != by {
					t.Fatalf("%s: %s held by %q", local, j.State, j.HeldBy)
				}
			}
			quarantine("a")
			hold("b", "a")
			f.enqueue(store.NewJob{Local: "free"})
			f.clk.Advance(365 * 24 * time.Hour)
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["free"] {
				t.Fatalf("claimed %v, want only the job without the fingerprint", got)
			}
			f.wantStats(map[string]string{"scheduled": "1", "quarantined": "1"})

			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"a"}); err != nil || errs[0] != nil {
				t.Fatalf("release: %v %v", errs, err)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 2 || !got["a"] || !got["b"] {
				t.Fatalf("after the release claimed %v, want a and b", got)
			}
			if n, _ := f.rdb.Exists(f.ctx, f.p.QuarantineHold("fp"), f.p.HeldOn("fp")).Result(); n != 0 {
				t.Fatalf("%d hold keys left after the release", n)
			}

			// deleting the quarantined job ends its hold too
			f2 := newFixture(t, b)
			f2.enqueue(store.NewJob{Local: "c", Hold: "fp"})
			for range 3 {
				f2.ack(f2.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
				f2.clk.Advance(time.Minute)
			}
			res, err := f2.st.Enqueue(f2.ctx, f2.p, []store.NewJob{{Local: "d", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
			if err != nil || res[0].HeldBy != "c" {
				t.Fatalf("enqueue d: %+v %v", res, err)
			}
			if _, err := f2.st.Delete(f2.ctx, keys.Ref{Partition: f2.p, Local: "c"}); err != nil {
				t.Fatal(err)
			}
			if got := locals(f2.claim(10, "w").Jobs); len(got) != 1 || !got["d"] {
				t.Fatalf("after deleting c claimed %v, want d", got)
			}
		})
	}
}

// crashOut claims job local and crashes it three times, a minute apart:
// quarantined at the fixture's crash limit.
func (f *fixture) crashOut(local string) {
	f.t.Helper()
	for range 3 {
		j := f.claimOne("w")
		if j.Local != local {
			f.t.Fatalf("claimed %s, want %s", j.Local, local)
		}
		f.ack(j, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
		f.clk.Advance(time.Minute)
	}
}

// TestQuarantineHoldTwoQuarantined: a second job of the fingerprint
// quarantined while the first still is leaves the hold with the first,
// and deleting either never strands a held job; a debounce of a held job
// leaves it held.
func TestQuarantineHoldTwoQuarantined(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Hold: "fp"}, store.NewJob{Local: "c", Hold: "fp", Delay: 10 * time.Hour})
			f.crashOut("a")
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp",
				Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}}})
			if err != nil || res[0].HeldBy != "a" {
				t.Fatalf("b: %+v %v", res, err)
			}
			// a debounced duplicate of b must not move it off its hold
			f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b2", Kind: "k", Payload: []byte("y"), MaxAttempts: 3, Delay: time.Second,
				Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}}})
			f.clk.Advance(time.Hour)
			if got := f.claim(10, "w").Jobs; len(got) != 0 {
				t.Fatalf("claimed %v while b is held", locals(got))
			}
			// c, a twin enqueued before a's quarantine, is quarantined too:
			// the hold stays a's, and deleting c frees nothing
			f.clk.Advance(10 * time.Hour)
			f.crashOut("c")
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "c"}); err != nil {
				t.Fatal(err)
			}
			if j, _ := f.get("b"); j.State != "scheduled" || j.HeldBy != "a" {
				t.Fatalf("b after deleting c: %s held by %q", j.State, j.HeldBy)
			}
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "a"}); err != nil {
				t.Fatal(err)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["b"] {
				t.Fatalf("after deleting a claimed %v, want b", got)
			}
		})
	}
}

// TestDeathsSkipCorruptJobs: a pending death report whose job key is not a
// hash (corrupt data) is dropped without failing the reports around it.
func TestDeathsSkipCorruptJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archive("a")
			f.rdb.ZAdd(f.ctx, f.p.Deaths(), redis.Z{Score: 0, Member: "bad"})
			f.rdb.Set(f.ctx, f.p.Job("bad"), "garbage", 0)
			f.archive("c")
			f.clk.Advance(time.Minute)
			jobs, err := f.st.TakeDeaths(f.ctx, f.p, 10, time.Minute)
			if err != nil || len(jobs) != 2 {
				t.Fatalf("take: %d jobs, %v; want a and c", len(jobs), err)
			}
			if _, err := f.rdb.ZScore(f.ctx, f.p.Deaths(), "bad").Result(); err != redis.Nil {
				t.Fatal("the corrupt job's report is still pending")
			}
		})
	}
}

// TestHeldJobCancelledAndRedriven: a held job cancelled and redriven runs
// on its own terms: it no longer names the quarantined job it was held
// behind, and that job's release later does not make it due before its
// time (here, a snooze).
func TestHeldJobCancelledAndRedriven(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "q", Hold: "fp"})
			for range 3 {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
				f.clk.Advance(time.Minute)
			}
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "t", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
			if err != nil || res[0].HeldBy != "q" {
				t.Fatalf("enqueue t: %+v %v", res, err)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("t"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"t"}); err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", errs, err)
			}
			if j, _ := f.get("t"); j.State != "available" || j.HeldBy != "" {
				t.Fatalf("redriven t: %s held by %q, want available and held by none", j.State, j.HeldBy)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"q"}); err != nil || errs[0] != nil {
				t.Fatalf("release: %v %v", errs, err)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["q"] {
				t.Fatalf("after the release claimed %v, want q alone (t is snoozed for an hour)", got)
			}
			if n, _ := f.rdb.Exists(f.ctx, f.p.HeldOn("fp")).Result(); n != 0 {
				t.Fatal("hold list left after the release")
			}
		})
	}
}

// TestHeldJobsLeaveNoIndexEntry: a held job is indexed at its never-due
// time in sched, whose next score (its release) replaces the entry. A
// review found it in a bucket of later jobs that never comes due: each
// release left its entry there, and the bucket grew by one entry per job
// ever held. Listings still show held jobs first, after the jobs
// suspended on signals only and before those due later than the horizon.
func TestHeldJobsLeaveNoIndexEntry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "late", Delay: 100 * 24 * time.Hour})
			for round := range 3 {
				q := fmt.Sprintf("q%d", round)
				f.enqueue(store.NewJob{Local: q, Hold: "fp"})
				f.crashOut(q)
				var held []store.NewJob
				for i := range 4 {
					held = append(held, store.NewJob{Local: fmt.Sprintf("h%d.%d", round, i), Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"})
				}
				res, err := f.st.Enqueue(f.ctx, f.p, held)
				if err != nil || res[0].HeldBy != q || res[3].HeldBy != q {
					t.Fatalf("round %d: enqueue held: %+v %v", round, res, err)
				}
				if got, want := f.listAll("scheduled", 2), []string{held[3].Local, held[2].Local, held[1].Local, held[0].Local, "late"}; !slices.Equal(got, want) {
					t.Fatalf("round %d: scheduled lists %v, want %v (held first, never due; ties highest ID first)", round, got, want)
				}
				if _, err := f.st.Delete(f.ctx, f.ref(q)); err != nil {
					t.Fatal(err)
				}
				for range held {
					f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
				}
			}
			buckets, err := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			var entries []string
			for _, bs := range buckets {
				ids, err := f.rdb.LRange(f.ctx, f.p.LaterBucket(bs), 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				entries = append(entries, ids...)
			}
			if !slices.Equal(entries, []string{"late"}) {
				t.Fatalf("buckets of later jobs %v hold %v after 12 held jobs ran; want late alone", buckets, entries)
			}
			if got := f.listAll("scheduled", 2); !slices.Equal(got, []string{"late"}) {
				t.Fatalf("scheduled lists %v, want late alone", got)
			}
		})
	}
}
