package store_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// The tests here, as corrupt_keys_test.go's, overwrite a key with a value
// of another type, here keys that jobs share or that a job's options name
// (a bucket of later jobs, a rate bucket, a concurrency wait list, a
// worker's pin list, a unique key) or a job's dead-effects counter, and
// check that the script that meets it goes on, deals with it, and loses
// no job. Before, each raised after writes Redis keeps: due jobs promoted
// in the same call were left available on no list, a partition stopped
// claiming for good, a cancel bumped the fence on every send.

// corruptUnique makes unique key k a hash (Sluice writes a string).
func (f *fixture) corruptUnique(k string) {
	f.t.Helper()
	f.rdb.Del(f.ctx, f.p.Unique(k))
	f.rdb.HSet(f.ctx, f.p.Unique(k), "a", "b")
}

// rawState is a job's state from its hash, "" when it has none.
func (f *fixture) rawState(local string) string {
	return store.StateName(f.rdb.HGet(f.ctx, f.p.Job(local), keys.FieldState).Val())
}

// claimed runs one claim and fails the test on its error.
func (f *fixture) claimed(nonce string) []string {
	f.t.Helper()
	res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: nonce, PromoteLimit: 100})
	if err != nil {
		f.t.Fatalf("claim %s: %v", nonce, err)
	}
	var ids []string
	for _, j := range res.Jobs {
		ids = append(ids, j.Local)
	}
	return ids
}

// TestSharedKeysCorrupt: claims and maintenance go on past a corrupt
// bucket of later jobs, a corrupt rate bucket, and a due sticky fallback
// whose job's unique key is corrupt; the due jobs they promote are
// claimed.
func TestSharedKeysCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/later bucket", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "far", Delay: time.Minute}, store.NewJob{Local: "soon", Delay: 2 * time.Second})
			bs := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(bs) != 1 {
				t.Fatalf("buckets of later jobs %v, want one", bs)
			}
			f.overwrite(f.p.LaterBucket(bs[0]))
			f.clk.Advance(2 * time.Minute)
			if _, err := f.st.Maintain(f.ctx, f.p, 10, 10, 10); err != nil {
				t.Fatalf("maintain: %v", err)
			}
			if got := f.claimed("n1"); len(got) != 1 || got[0] != "soon" {
				t.Fatalf("claimed %v, want soon", got)
			}
		})
		t.Run(b.name+"/sched, a bucket of later jobs due", func(t *testing.T) {
			// the claim pops the due bucket into sched, then reads sched:
			// both meet the damage after the pop wrote
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "far", Delay: time.Minute})
			f.clk.Advance(2 * time.Minute)
			f.overwrite(f.p.Sched())
			if got := f.claimed("n1"); len(got) != 1 || got[0] != "far" {
				t.Fatalf("claimed %v, want far", got)
			}
			if n := f.rdb.Exists(f.ctx, f.p.Aside(keys.AsideShared, "sched", 1)).Val(); n != 1 {
				t.Errorf("the damaged sched was not set aside under x:k:sched")
			}
		})
		t.Run(b.name+"/rate bucket", func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Minute, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r1", Limits: lim}, store.NewJob{Local: "r2", Limits: lim})
			if got := f.claimed("n1"); len(got) != 1 {
				t.Fatalf("claimed %v, want one of the rated jobs", got)
			}
			f.enqueue(store.NewJob{Local: "plain", Delay: time.Second})
			f.overwrite(f.p.RateBucket("r"))
			f.clk.Advance(2 * time.Minute)
			got := f.claimed("n2")
			if len(got) != 2 {
				t.Fatalf("claimed %v, want plain and the waiting rated job", got)
			}
		})
		t.Run(b.name+"/sticky fallback, unique key", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "pin", Unique: store.Unique{Key: "u"}, Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Second}},
				store.NewJob{Local: "due", Delay: 2 * time.Second})
			f.corruptUnique("u")
			f.clk.Advance(3 * time.Second)
			if got := f.claimed("n1"); len(got) != 1 || got[0] != "due" {
				t.Fatalf("claimed %v, want due", got)
			}
			if f.rawState("pin") != "archived" || f.reason("pin") != "sticky_unavailable" {
				t.Errorf("pin: %s (%q), want archived sticky_unavailable", f.rawState("pin"), f.reason("pin"))
			}
		})
	}
}

// TestOperatorCallsPassCorruptKeys: cancel, delete, a delete by selector
// and run now of jobs whose unique key, concurrency wait list or worker's
// pin list is corrupt do what they say, once, without error. Before,
// each raised after its first writes: a cancelled job left available on
// no list, a fence bumped on every send, a deleted job left scheduled on
// no index.
func TestOperatorCallsPassCorruptKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/cancel available", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad", Unique: store.Unique{Key: "u"}})
			f.corruptUnique("u")
			if _, err := f.st.Cancel(f.ctx, f.ref("bad"), retainCancelled); err != nil || f.rawState("bad") != "cancelled" {
				t.Fatalf("cancel: %v, state %s", err, f.rawState("bad"))
			}
		})
		t.Run(b.name+"/cancel running", func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim, Unique: store.Unique{Key: "u"}}, store.NewJob{Local: "b", Limits: lim})
			j := f.claimOne("w")
			f.corruptUnique("u")
			f.overwrite(f.p.ConcurrencyWait("k"))
			if _, err := f.st.Cancel(f.ctx, f.ref(j.Local), retainCancelled); err != nil || f.rawState(j.Local) != "cancelled" {
				t.Fatalf("cancel: %v, state %s", err, f.rawState(j.Local))
			}
			if fence := f.rdb.HGet(f.ctx, f.p.Job(j.Local), keys.FieldFence).Val(); fence != "2" {
				t.Errorf("fence %s, want 2 (raised once)", fence)
			}
		})
		t.Run(b.name+"/delete", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad", Delay: time.Second, Unique: store.Unique{Key: "u"}})
			f.corruptUnique("u")
			if _, err := f.st.Delete(f.ctx, f.ref("bad")); err != nil || f.rawState("bad") != "" {
				t.Fatalf("delete: %v, state %q", err, f.rawState("bad"))
			}
		})
		t.Run(b.name+"/delete by selector", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Delay: time.Second},
				store.NewJob{Local: "bad", Delay: 2 * time.Second, Unique: store.Unique{Key: "u"}},
				store.NewJob{Local: "c", Delay: 3 * time.Second})
			f.corruptUnique("u")
			if _, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "scheduled"}, store.ScanCursor{}, 10, false); err != nil {
				t.Fatalf("delete step: %v", err)
			}
			for _, id := range []string{"a", "bad", "c"} {
				if s := f.rawState(id); s != "" {
					t.Errorf("%s is %s, want deleted", id, s)
				}
			}
			if s := f.stats(); s["scheduled"] != 0 {
				t.Errorf("stats %v, want no scheduled job", s)
			}
		})
		t.Run(b.name+"/run now, pin list", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "p", Delay: time.Second, Sticky: store.Sticky{Worker: "w2", Mode: "w"}})
			f.overwrite(f.p.Pinned("w2"))
			if _, err := f.st.RunNow(f.ctx, f.ref("p")); err != nil {
				t.Fatalf("run now: %v", err)
			}
			if l := f.rdb.LRange(f.ctx, f.p.Pinned("w2"), 0, -1).Val(); len(l) != 1 || l[0] != "p" {
				t.Errorf("w2's pin list %v, want [p]", l)
			}
		})
		t.Run(b.name+"/maintain, pin list", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "p", Delay: time.Second, Sticky: store.Sticky{Worker: "w2", Mode: "w"}},
				store.NewJob{Local: "q", Delay: time.Second})
			f.overwrite(f.p.Pinned("w2"))
			f.clk.Advance(2 * time.Second)
			if _, err := f.st.Maintain(f.ctx, f.p, 10, 10, 10); err != nil {
				t.Fatalf("maintain: %v", err)
			}
			if got := f.claimed("n1"); len(got) != 1 || got[0] != "q" {
				t.Errorf("claimed %v, want q (p waits for w2)", got)
			}
		})
	}
}

// TestBuryCorruptDeadCount: a relay that dead-letters effects of two
// jobs, one of which has a dead-effects count that is no integer, reports
// both. Before, the count's HINCRBY raised after both entries had moved
// to the dead stream: neither was ever reported.
func TestBuryCorruptDeadCount(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag()) // another slot, a list: INCRBY cannot apply
			f.rdb.RPush(f.ctx, bad, "x")
			f.enqueue(store.NewJob{Local: "A"}, store.NewJob{Local: "B"})
			held := f.claimLeases(2, "w")
			for _, id := range []string{"A", "B"} {
				if _, err := f.checkpoint(store.Checkpoint{Lease: held[id], Field: "s", Record: []byte("r"), Mode: store.ModeOnce,
					Commit: id + ":s", Effects: []sluicetype.Effect{fx("INCRBY", bad, "5")}}); err != nil {
					t.Fatal(err)
				}
			}
			f.rdb.HSet(f.ctx, f.p.Job("B"), keys.FieldDeadEffects, "x")
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 2 {
				t.Fatalf("relay: %+v %v, want both effects reported dead", res, err)
			}
		})
	}
}

// TestCountsAndOutboxCorrupt: what flush() and the outbox writes meet
// after a call's writes (Redis rolls none back): a state count in stats
// that is no integer, the minute's tally of another type or with a field
// that is no integer, an outbox of another type met by a child's
// notice to its parent in another partition or by an effect on another
// slot's key. Before, each raised after the call's writes: a claim's
// leases left running unseen (reaped as crashes), an ack's completions
// left out of their indexes. Now a count or tally starts anew from the
// call's change, and a key of another type is set aside (x:k:<key>).
func TestCountsAndOutboxCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/stats field", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			f.rdb.HSet(f.ctx, f.p.Stats(), "running", "x")
			if got := f.claimed("n1"); len(got) != 2 {
				t.Fatalf("claimed %v, want a and b", got)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Stats(), "running").Val(); v != "2" {
				t.Errorf("stats running %q, want 2 (started anew)", v)
			}
		})
		minute := func(f *fixture) string { return f.p.Minute(f.clk.Now().UnixMilli() / 60000) }
		t.Run(b.name+"/minute tally a string", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			j := f.claimOne("w")
			f.overwrite(minute(f))
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil {
				t.Fatalf("ack: %v", r.Err)
			}
			if n, _ := f.rdb.ZScore(f.ctx, f.p.Terminal("completed"), "a").Result(); n == 0 {
				t.Errorf("a is not in the completed index")
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideShared, "m:"+strconv.FormatInt(f.clk.Now().UnixMilli()/60000, 10), 1)).Val(); v != "overwritten" {
				t.Errorf("set aside %q, want the overwritten value", v)
			}
			if v := f.rdb.HGet(f.ctx, minute(f), "completed").Val(); v != "1" {
				t.Errorf("tally completed %q, want 1", v)
			}
		})
		t.Run(b.name+"/minute tally field", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			j := f.claimOne("w")
			f.rdb.HSet(f.ctx, minute(f), "completed", "x")
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil {
				t.Fatalf("ack: %v", r.Err)
			}
			if v := f.rdb.HGet(f.ctx, minute(f), "completed").Val(); v != "1" {
				t.Errorf("tally completed %q, want 1 (started anew)", v)
			}
			if s := f.stats(); s["completed"] != 1 || s["running"] != 0 {
				t.Errorf("stats %v, want a completed", s)
			}
		})
		// the outbox holds another type, or is a stream that takes no new
		// entry (its last ID the greatest there is): set aside either way
		for _, bad := range []struct {
			name    string
			corrupt func(f *fixture)
			aside   string // the set-aside key's type
		}{
			{"outbox", func(f *fixture) { f.overwrite(f.p.Outbox()) }, "string"},
			{"full outbox", func(f *fixture) { f.fillStream(f.p.Outbox()) }, "stream"},
		} {
			outboxed := func(t *testing.T, f *fixture, a store.Ack) {
				t.Helper()
				j := f.claimOne("w")
				bad.corrupt(f)
				if r := f.ack(j, a); r.Err != nil {
					t.Fatalf("ack: %v", r.Err)
				}
				if f.rawState(j.Local) != "completed" {
					t.Errorf("%s is %s, want completed", j.Local, f.rawState(j.Local))
				}
				if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 1 {
					t.Errorf("outbox holds %d entries, want 1", n)
				}
				if b.name == "miniredis" && bad.name == "full outbox" {
					return // miniredis adds past the greatest ID: nothing to set aside
				}
				if typ := f.rdb.Type(f.ctx, f.p.Aside(keys.AsideShared, "outbox", 1)).Val(); typ != bad.aside {
					t.Errorf("set aside: a %q, want the corrupt %s", typ, bad.aside)
				}
			}
			t.Run(b.name+"/"+bad.name+", a parent elsewhere", func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.st.Partition("elsewhere", 0), Local: "P"}, Step: "s"}})
				outboxed(t, f, store.Ack{Code: store.CodeOK})
			})
			t.Run(b.name+"/"+bad.name+", an effect elsewhere", func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "e"})
				outboxed(t, f, store.Ack{Code: store.CodeOK, Commit: "e:c", Effects: []sluicetype.Effect{fx("INCRBY", "{elsewhere}:bal", "1")}})
			})
		}
	}
}

// TestStaleEntryOfAnOlderReroute: a reroute by an older release records
// no F.sticky_left, so the entry it left on the old worker's pin list
// looks like the job's only one to that worker's claim (claim.lua). That
// claim listed the job anew on its new worker's list even when it waited
// on its concurrency key's wait list (listed twice: the waiter count 2),
// and restarted a fallback deadline running on the new list. Now it
// leaves a waiting job where it is, and keeps a running deadline.
func TestStaleEntryOfAnOlderReroute(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		claimBy := func(f *fixture, w string) []string {
			f.t.Helper()
			var ids []string
			for _, j := range f.claim(10, w).Jobs {
				ids = append(ids, j.Local)
			}
			return ids
		}
		// rerouteOld reroutes p to w2 as an older release would: no
		// record of the list it left.
		rerouteOld := func(f *fixture, after time.Duration) {
			f.t.Helper()
			if _, err := f.st.Reroute(f.ctx, f.ref("p"), store.Sticky{Worker: "w2", Mode: "a", After: after}); err != nil {
				f.t.Fatalf("reroute: %v", err)
			}
			f.rdb.HDel(f.ctx, f.p.Job("p"), keys.FieldStickyLeft)
		}
		t.Run(b.name+"/waiting on its concurrency key", func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim},
				store.NewJob{Local: "p", Limits: lim, Sticky: store.Sticky{Worker: "w1", Mode: "w"}})
			rerouteOld(f, time.Minute)
			if got := claimBy(f, "w0"); len(got) != 1 || got[0] != "a" {
				t.Fatalf("w0 claimed %v, want a", got)
			}
			if got := claimBy(f, "w2"); len(got) != 0 {
				t.Fatalf("w2 claimed %v, want p set waiting", got)
			}
			if got := claimBy(f, "w1"); len(got) != 0 {
				t.Fatalf("w1 claimed %v, want nothing (its entry is stale)", got)
			}
			if l := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Val(); len(l) != 1 {
				t.Errorf("wait list %v, want [p]", l)
			}
			if l := f.rdb.LRange(f.ctx, f.p.Pinned("w2"), 0, -1).Val(); len(l) != 0 {
				t.Errorf("w2's pin list %v, want none (p waits on k)", l)
			}
			if n := f.rdb.HGet(f.ctx, f.p.ConcurrencyWaiting(), "k").Val(); n != "1" {
				t.Errorf("waiter count %q, want 1", n)
			}
			if err := f.rdb.ZScore(f.ctx, f.p.PinDeadlines(), "p").Err(); err == nil {
				t.Errorf("p has a fallback deadline while it waits on k")
			}
		})
		t.Run(b.name+"/its fallback running", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "p", Sticky: store.Sticky{Worker: "w1", Mode: "w"}})
			rerouteOld(f, time.Minute)
			at := f.rdb.ZScore(f.ctx, f.p.PinDeadlines(), "p").Val()
			f.clk.Advance(30 * time.Second)
			if got := claimBy(f, "w1"); len(got) != 0 {
				t.Fatalf("w1 claimed %v, want nothing", got)
			}
			if got := f.rdb.ZScore(f.ctx, f.p.PinDeadlines(), "p").Val(); got != at {
				t.Errorf("fallback deadline %v, want %v (kept)", got, at)
			}
			if got := claimBy(f, "w2"); len(got) != 1 || got[0] != "p" {
				t.Errorf("w2 claimed %v, want p", got)
			}
		})
	}
}

// TestRerouteCorruptPinDeadlines: a reroute of a job that waits on its
// concurrency key removes its fallback deadline after it wrote the new
// routing; pinx of another type made it raise there. Now pinx is set
// aside and the reroute completes.
func TestRerouteCorruptPinDeadlines(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim}, store.NewJob{Local: "p", Limits: lim})
			f.claimOne("w")
			if res := f.claim(1, "w"); len(res.Jobs) != 0 {
				t.Fatalf("claimed %v, want p set waiting", res.Jobs)
			}
			f.overwrite(f.p.PinDeadlines())
			if _, err := f.st.Reroute(f.ctx, f.ref("p"), store.Sticky{Worker: "w2", Mode: "a", After: time.Minute}); err != nil {
				t.Fatalf("reroute: %v", err)
			}
			if w := f.rdb.HGet(f.ctx, f.p.Job("p"), keys.FieldStickyWorker).Val(); w != "w2" {
				t.Errorf("p prefers %q, want w2", w)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideShared, "pinx", 1)).Val(); v != "overwritten" {
				t.Errorf("set aside %q, want the overwritten value", v)
			}
		})
	}
}

// TestListPassesCorruptLaterBucket: a listing of scheduled jobs read each
// bucket of later jobs with redis.call; one that holds no list failed the
// listing. Now it is passed over and the listing goes on.
func TestListPassesCorruptLaterBucket(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.corruptBucketOf(10 * time.Minute)
			f.enqueue(store.NewJob{Local: "a", Delay: time.Minute})
			var got []string
			cursor := ""
			for range 10 {
				page, err := f.st.List(f.ctx, f.p, "scheduled", cursor, 10, 100, "")
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				for _, e := range page.Entries {
					got = append(got, e.Job.Local)
				}
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			if len(got) != 1 || got[0] != "a" {
				t.Errorf("listed %v, want a", got)
			}
		})
	}
}
