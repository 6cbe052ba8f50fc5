package store_test

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// These tests hold a corrupt job to what it shares with healthy ones: its
// concurrency key's slot and its unique key. A helper's audit found that a
// running job whose key was overwritten, whose hash was deleted by hand or
// whose state was no state kept its key's slot for ever (the reaper freed
// only a readable running job's), stranding every waiter of the key; and
// that a unique key stayed held by a job archived as malformed, or by one
// a claim dropped as a stale entry, for the archive's retention or for
// good. Each test failed before its fix.

// claimedLocals is the sorted IDs of the jobs a claim leased.
func claimedLocals(res store.ClaimResult) []string {
	return slices.Sorted(maps.Keys(locals(res.Jobs)))
}

// TestCorruptRunningJobFreesItsSlot: a running job of key k (limit 1) is
// damaged three ways; once its lease runs out, the reaper frees its slot
// and the healthy job waiting on k runs. A state no release writes is
// archived as malformed, as a claim archives an available one.
func TestCorruptRunningJobFreesItsSlot(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(f *fixture)
	}{
		{"key overwritten", func(f *fixture) { f.overwrite(f.p.Job("bad")) }},
		{"hash deleted", func(f *fixture) { f.rdb.Del(f.ctx, f.p.Job("bad")) }},
		{"state zzz", func(f *fixture) { f.rdb.HSet(f.ctx, f.p.Job("bad"), "s", "zzz") }},
	}
	for _, b := range backends(t) {
		for _, d := range damages {
			t.Run(b.name+"/"+d.name, func(t *testing.T) {
				f := newFixture(t, b)
				lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
				f.enqueue(store.NewJob{Local: "bad", Limits: lim}, store.NewJob{Local: "good", Limits: lim})
				if got := claimedLocals(f.claim(10, "w")); !slices.Equal(got, []string{"bad"}) {
					t.Fatalf("first claim %v, want [bad] (good waits on k)", got)
				}
				d.damage(f)
				f.clk.Advance(time.Minute)
				reaped, err := f.reap(10)
				if err != nil {
					t.Fatal(err)
				}
				if d.name != "hash deleted" {
					if got := reapedStates(reaped)["bad"]; got != "archived" || f.rawState("bad") != "archived" || f.reason("bad") != "malformed" {
						t.Fatalf("bad reaped %q, now %q (%q); want archived, malformed", got, f.rawState("bad"), f.reason("bad"))
					}
				}
				if got := claimedLocals(f.claim(10, "w")); !slices.Equal(got, []string{"good"}) {
					t.Fatalf("claim after the reap: %v, want [good]: k's slot was not freed", got)
				}
			})
		}
	}
}

// TestSlotRecountKeepsHealthySlots: the recount a corrupt job's reap makes
// lowers its key's count to the running jobs that hold it, no further: of
// two more waiters of key k (limit 2), one runs beside the healthy job
// still running, the other waits.
func TestSlotRecountKeepsHealthySlots(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 2}
			f.enqueue(store.NewJob{Local: "bad", Limits: lim}, store.NewJob{Local: "a", Limits: lim},
				store.NewJob{Local: "c", Limits: lim}, store.NewJob{Local: "d", Limits: lim})
			f.claimOne("w") // bad, its lease out at 30 s
			f.clk.Advance(20 * time.Second)
			f.claimOne("w") // a, its lease out at 50 s
			f.rdb.Del(f.ctx, f.p.Job("bad"))
			f.clk.Advance(15 * time.Second)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			if got := claimedLocals(f.claim(10, "w")); !slices.Equal(got, []string{"c"}) {
				t.Fatalf("claim after the recount: %v, want [c] beside a, d waiting", got)
			}
		})
	}
}

// TestUniqueKeyNotHeldByCorruptJob: a unique key is free again once the
// job that named it is archived as malformed, whether a claim archived it
// (its key overwritten: the unique key could not be read then; or a state
// no release writes, which the claim had dropped as a stale entry) or the
// reaper did (running, with a state no release writes).
func TestUniqueKeyNotHeldByCorruptJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "u1", Unique: store.Unique{Key: "one"}},
				store.NewJob{Local: "u2", Unique: store.Unique{Key: "two"}})
			f.overwrite(f.p.Job("u1"))
			f.rdb.HSet(f.ctx, f.p.Job("u2"), "s", "zzz")
			res := f.claim(10, "w")
			parked := map[string]string{}
			for _, p := range res.Parked {
				parked[p.Local] = p.Reason
			}
			if len(res.Jobs) != 0 || parked["u1"] != "malformed" || parked["u2"] != "malformed" {
				t.Fatalf("claim leased %v and parked %v; want u1 and u2 parked as malformed", claimedLocals(res), parked)
			}
			f.enqueue(store.NewJob{Local: "v1", Unique: store.Unique{Key: "three"}})
			f.claimOne("w")
			f.rdb.HSet(f.ctx, f.p.Job("v1"), "s", "zzz")
			f.clk.Advance(time.Minute)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			// each key free again: f.enqueue fails on a duplicate
			f.enqueue(store.NewJob{Local: "n1", Unique: store.Unique{Key: "one"}},
				store.NewJob{Local: "n2", Unique: store.Unique{Key: "two"}},
				store.NewJob{Local: "n3", Unique: store.Unique{Key: "three"}})
		})
	}
}

// TestRedriveTakesKeyFromFinishedHolder: a redriven job takes its unique
// key back from a job that names it but has finished (one archived as
// malformed before its key could be freed), as from one that is gone.
func TestRedriveTakesKeyFromFinishedHolder(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archiveJob(store.NewJob{Local: "x", Unique: store.Unique{Key: "r"}})
			f.archive("y")
			f.rdb.Set(f.ctx, f.p.Unique("r"), "y", 0)
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"x"}); err != nil || errs[0] != nil {
				t.Fatalf("redrive x: %v %v", errs, err)
			}
			if got := f.rdb.Get(f.ctx, f.p.Unique("r")).Val(); got != "x" {
				t.Fatalf("unique key r names %q after x's redrive, want x", got)
			}
		})
	}
}

// TestRedriveLeavesKeyHeldForItsTTL: a redriven job does not take its
// unique key from a job that holds it for a TTL, finished or not (a
// helper's audit: the redrive took it without the TTL, and the redriven
// job's end deleted it inside the other job's hold).
func TestRedriveLeavesKeyHeldForItsTTL(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archiveJob(store.NewJob{Local: "a", Unique: store.Unique{Key: "u"}})
			f.enqueue(store.NewJob{Local: "c", Unique: store.Unique{Key: "u", TTL: time.Hour}})
			if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("c: %+v, want completed", r)
			}
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a"}); err != nil || errs[0] != nil {
				t.Fatalf("redrive a: %v %v", errs, err)
			}
			if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("a again: %+v, want completed", r)
			}
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "d", Kind: "k", Payload: []byte("d"), MaxAttempts: 1, Unique: store.Unique{Key: "u"}}})
			if err != nil || res[0].Status == store.Added || res[0].Existing != "c" {
				t.Fatalf("a duplicate inside c's hour: %+v, %v; want held by c", res, err)
			}
		})
	}
}

// TestAckRecountsAChangedKey: a running job whose concurrency key field
// was changed since its claim frees, at its ack, a key that counts no
// running job; the ack recounts, and the key its claim counted lets its
// waiter go.
func TestAckRecountsAChangedKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "bad", Limits: lim}, store.NewJob{Local: "good", Limits: lim})
			j := f.claimOne("w")
			f.rdb.HSet(f.ctx, f.p.Job("bad"), "ck", "x")
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("bad: %+v, want completed", r)
			}
			if got := claimedLocals(f.claim(10, "w")); !slices.Equal(got, []string{"good"}) {
				t.Fatalf("claim after the ack: %v, want [good]: k's slot was not freed", got)
			}
		})
	}
}

// TestDueJobWithNoStateArchived: a scheduled job whose state field names
// no state is archived as malformed when it falls due, by a maintenance
// pass or a claim's promotion, not dropped from the scheduled index.
func TestDueJobWithNoStateArchived(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "m", Delay: time.Second}, store.NewJob{Local: "c", Delay: time.Second})
			f.rdb.HSet(f.ctx, f.p.Job("m"), "s", "zzz")
			f.rdb.HSet(f.ctx, f.p.Job("c"), "s", "")
			f.clk.Advance(time.Minute)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"m", "c"} {
				if f.rawState(id) != "archived" || f.reason(id) != "malformed" {
					t.Fatalf("%s is %q (%q), want archived as malformed", id, f.rawState(id), f.reason(id))
				}
			}
		})
	}
}

// TestRerouteRefusesNoState: a reroute of a job whose state field names
// no state is refused as malformed, with nothing written (it wrote the
// new routing, then answered "not found").
func TestRerouteRefusesNoState(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"})
			f.rdb.HSet(f.ctx, f.p.Job("j"), "s", "")
			before := f.rdb.HGetAll(f.ctx, f.p.Job("j")).Val()
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "w2", Mode: "w"}); !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("reroute: %v, want ErrMalformed", err)
			}
			if after := f.rdb.HGetAll(f.ctx, f.p.Job("j")).Val(); !maps.Equal(before, after) {
				t.Fatalf("the refused reroute wrote the job: %v -> %v", before, after)
			}
		})
	}
}
