package store_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// The tests here check where a script sets aside a key it finds holding
// another type (lua/lib.lua set_aside, keys.Partition.Aside). Before, it
// RENAMEd the key to x:<what>, which replaced whatever was there: a key
// damaged a second time (a job's key, a shared counter), or a job whose ID
// spelled another kind's name (a job "k:stats" beside the partition's
// stats, "list:<key>" beside a ready list), lost the value set aside
// first, the one the operator was meant to find.

// damage overwrites key with the string value, which names the damage.
func (f *fixture) damage(key, value string) {
	f.t.Helper()
	if err := f.rdb.Set(f.ctx, key, value, 0).Err(); err != nil {
		f.t.Fatal(err)
	}
}

// asides is what the partition's set-aside keys (x:...) hold: by value
// (each a string damage wrote), the key it is under.
func (f *fixture) asides() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for k, v := range partitionKeys(f.t, f) {
		if strings.HasPrefix(k, f.p.Prefix()+"x:") {
			out[strings.TrimPrefix(v, "string ")] = k
		}
	}
	return out
}

// wantAsides checks that every value of want is set aside, under the key
// want gives it (by value).
func (f *fixture) wantAsides(want map[string]string) {
	f.t.Helper()
	got := f.asides()
	for v, k := range want {
		switch at, ok := got[v]; {
		case !ok:
			f.t.Errorf("%q is set aside nowhere, lost (set aside: %v)", v, got)
		case at != k:
			f.t.Errorf("%q is set aside as %s, want %s", v, at, k)
		}
	}
	if len(got) != len(want) {
		f.t.Errorf("set aside %v, want %v", got, want)
	}
}

// TestSetAsideKeepsEveryValue: a key set aside again keeps the value set
// aside before, under the next number: a job's key damaged at a claim,
// then again once archived (the sweep), then, the ID reused, again; the
// partition's stats damaged twice. Deleting a job leaves its values set
// aside (they may be an earlier job's of the ID). Where numbers are taken,
// the value goes to a free one past a taken one.
func TestSetAsideKeepsEveryValue(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/job key", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"})
			f.damage(f.p.Job("bad"), "first")
			if res := f.claim(10, "w"); len(res.Parked) != 1 || res.Parked[0].Reason != "malformed" {
				t.Fatalf("claim parked %+v, want bad, malformed", res.Parked)
			}
			f.damage(f.p.Job("bad"), "second")
			f.clk.Advance(retainArchived + time.Hour)
			if _, err := f.sweep(100); err != nil {
				t.Fatalf("sweep: %v", err)
			}
			f.enqueue(store.NewJob{Local: "bad"}) // the sweep left no job: the ID is free
			f.damage(f.p.Job("bad"), "third")
			f.claim(10, "w")
			// the job archived by that claim is deleted at its retention
			f.clk.Advance(retainArchived + time.Hour)
			if n, err := f.sweep(100); err != nil || n != 1 {
				t.Fatalf("sweep deleted %d, %v; want the archived job", n, err)
			}
			f.wantAsides(map[string]string{
				"first":  f.p.Aside(keys.AsideJob, "bad", 1),
				"second": f.p.Aside(keys.AsideJob, "bad", 2),
				"third":  f.p.Aside(keys.AsideJob, "bad", 3),
			})
		})
		t.Run(b.name+"/shared key", func(t *testing.T) {
			f := newFixture(t, b)
			f.damage(f.p.Stats(), "first")
			f.enqueue(store.NewJob{Local: "a"})
			f.damage(f.p.Stats(), "second")
			f.enqueue(store.NewJob{Local: "b"})
			f.wantAsides(map[string]string{
				"first":  f.p.Aside(keys.AsideShared, "stats", 1),
				"second": f.p.Aside(keys.AsideShared, "stats", 2),
			})
			if s := f.stats(); s["available"] != 1 {
				t.Errorf("stats %v, want the second enqueue's count alone", s)
			}
		})
		t.Run(b.name+"/numbers taken", func(t *testing.T) {
			f := newFixture(t, b)
			want := map[string]string{}
			for n := 1; n <= 9; n++ {
				v := "v" + strconv.Itoa(n)
				f.damage(f.p.Aside(keys.AsideShared, "stats", n), v)
				want[v] = f.p.Aside(keys.AsideShared, "stats", n)
			}
			f.damage(f.p.Stats(), "tenth")
			f.enqueue(store.NewJob{Local: "a"})
			want["tenth"] = f.p.Aside(keys.AsideShared, "stats", 10)
			f.wantAsides(want)
			// the operator deletes 5 once read: the next goes past the
			// last (2, 4, 8 taken, 16 free, then 12, 10, 11)
			f.rdb.Del(f.ctx, f.p.Aside(keys.AsideShared, "stats", 5))
			delete(want, "v5")
			f.damage(f.p.Stats(), "eleventh")
			f.enqueue(store.NewJob{Local: "b"})
			want["eleventh"] = f.p.Aside(keys.AsideShared, "stats", 11)
			f.wantAsides(want)
		})
	}
}

// TestSetAsideKindsApart: a job whose ID spells the name of another kind
// of key set aside ("k:stats", "list:<ready list>", "later:<bucket>",
// "ccwait:<key>", "ratewait:<class>"; an ID may hold any printable
// character but a space) is set aside apart from it: both values stay.
func TestSetAsideKindsApart(t *testing.T) {
	t.Parallel()
	cc := store.Limits{ConcurrencyKey: "c", ConcurrencyLimit: 1}
	rate := store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
	// waitOn makes a job wait on the wait list of lim, whose key holds
	// "other": the claim sets it aside
	waitOn := func(f *fixture, lim store.Limits, list string) {
		f.enqueue(store.NewJob{Local: "first", Limits: lim})
		if got := f.claimed("n0"); len(got) != 1 {
			t.Fatalf("claimed %v, want first (it takes the slot, or the token)", got)
		}
		f.enqueue(store.NewJob{Local: "waiter", Limits: lim})
		f.damage(list, "other")
		f.claimed("n1")
	}
	cases := []struct {
		name string
		// other damages the other kind's key, gets it set aside, and
		// returns the job ID that spells its set-aside name, and that name
		other func(f *fixture) (id, aside string)
	}{
		{"shared key", func(f *fixture) (string, string) {
			f.damage(f.p.Stats(), "other")
			f.enqueue(store.NewJob{Local: "a"})
			return "k:stats", f.p.Aside(keys.AsideShared, "stats", 1)
		}},
		{"ready list", func(f *fixture) (string, string) {
			f.damage(f.p.Available(0), "other")
			f.enqueue(store.NewJob{Local: "a"})
			return "list:" + f.p.Available(0), f.p.Aside(keys.AsideList, f.p.Available(0), 1)
		}},
		{"bucket of later jobs", func(f *fixture) (string, string) {
			f.enqueue(store.NewJob{Local: "far", Delay: time.Minute})
			bs := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(bs) != 1 {
				f.t.Fatalf("buckets %v, want one", bs)
			}
			f.damage(f.p.LaterBucket(bs[0]), "other")
			f.clk.Advance(2 * time.Minute)
			f.claimed("n0")
			return "later:" + bs[0], f.p.Aside(keys.AsideLater, bs[0], 1)
		}},
		{"concurrency wait list", func(f *fixture) (string, string) {
			waitOn(f, cc, f.p.ConcurrencyWait("c"))
			return "ccwait:c", f.p.Aside(keys.AsideCCWait, "c", 1)
		}},
		{"rate wait list", func(f *fixture) (string, string) {
			waitOn(f, rate, f.p.RateWait("r"))
			return "ratewait:r", f.p.Aside(keys.AsideRateWait, "r", 1)
		}},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				id, aside := tc.other(f)
				f.enqueue(store.NewJob{Local: id})
				f.damage(f.p.Job(id), "job")
				res := f.claim(10, "w")
				if len(res.Parked) != 1 || res.Parked[0].Local != id || res.Parked[0].Reason != "malformed" {
					t.Fatalf("claim parked %+v, want %s, malformed", res.Parked, id)
				}
				f.wantAsides(map[string]string{"other": aside, "job": f.p.Aside(keys.AsideJob, id, 1)})
			})
		}
	}
}
