package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// TestPinnedRateWaiterHoldsTokenBriefly: a rate-class waiter pinned to a
// worker that went away (its claim parked it on the class, then it died)
// is let go by the class's next token to that worker's pin list, which
// no one reads. The unpinned waiter behind it gets the token a moment
// later (lib_limits.lua PIN_GRACE), not a whole period later: pinned work
// never hides runnable unpinned work for long. (TestRerouteWaitingJob:
// a pinned waiter whose worker claims at once keeps its turn.)
func TestPinnedRateWaiterHoldsTokenBriefly(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			if l := locals(f.claim(10, "w").Jobs); !l["r0"] { // spends the token
				t.Fatalf("first claim %v", l)
			}
			f.enqueue(store.NewJob{Local: "p", Limits: rl, Sticky: store.Sticky{Worker: "gone", Mode: "w"}})
			if got := f.claim(10, "gone"); len(got.Jobs) != 0 { // p waits on the class; then "gone" dies
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			f.enqueue(store.NewJob{Local: "u", Limits: rl})
			if got := f.claim(10, "w"); len(got.Jobs) != 0 { // u waits on the class behind p
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			f.clk.Advance(time.Hour) // one token: p goes to gone's pin list, unspent
			got := claimRounds(f, time.Second)
			if !got["u"] {
				f.clk.Advance(time.Hour)
				later := claimRounds(f, time.Second)
				t.Fatalf("a second hour on, claimed %v; claimed %v in the 3 s after a token came; u (unpinned) waits on the class for the next token, an hour on, "+
					"while the token went to p, pinned to a worker that never claims", later, got)
			}
		})
	}
}

// TestPinThenUnpinListsOnce: an unpinned available job pinned by a
// reroute, then unpinned by a second, is listed once on the shared list:
// its entry there leaves it with the pin, or the entry would be live
// again once unpinned beside the one the unpin adds, and claims that meet
// both with its concurrency key full would set it waiting twice (the
// key's waiter count 2 for one job: what reroute.lua says a reroute must
// never cause).
func TestPinThenUnpinListsOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "a", Limits: lim})
			if j := f.claimOne("w"); j.Local != "a" { // a holds k
				t.Fatalf("claimed %s", j.Local)
			}
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "j", Limits: lim})
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "worker-b", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			entries, _ := f.rdb.LRange(f.ctx, f.p.Available(0), 0, -1).Result()
			n := 0
			for _, e := range entries {
				if e == "j" {
					n++
				}
			}
			f.claim(1, "w") // j (full key: waits), then x
			f.claim(1, "w") // the other copy of j
			waiting, _ := f.rdb.HGet(f.ctx, f.p.ConcurrencyWait("k")[:0]+f.p.ConcurrencyWaiting(), "k").Result()
			wl, _ := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Result()
			if n != 1 || len(wl) != 1 {
				t.Fatalf("after pin then unpin the shared list holds j %d times (%v); k's wait list %v, waiter count %q, want j once", n, entries, wl, waiting)
			}
		})
	}
}

// TestRerouteResent: a reroute whose reply is lost (go-redis sends it
// again) or that is delivered twice moves the job once: it answers the
// first run's state, and the job is listed once, on its new worker's list.
func TestRerouteResent(t *testing.T) {
	t.Parallel()
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			l := newLossy(t)
			if err := lua.Reroute.Load(context.Background(), l.rdb); err != nil {
				t.Fatal(err)
			}
			l.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "b", Mode: "a", After: time.Minute}})
			check := l.fault(kind)
			state, err := l.st.Reroute(l.ctx, keys.Ref{Partition: l.p, Local: "j"}, store.Sticky{Worker: "c", Mode: "w"})
			check()
			if err != nil || state != "available" {
				t.Fatalf("reroute: %q %v", state, err)
			}
			c, _ := l.rdb.LRange(l.ctx, l.p.Pinned("c"), 0, -1).Result()
			b, _ := l.rdb.LRange(l.ctx, l.p.Pinned("b"), 0, -1).Result()
			if len(c) != 1 || len(b) != 0 {
				t.Fatalf("pin lists after the reroute: c %v, b %v; want j once on c's", c, b)
			}
			if got := locals(l.claim(10, "c").Jobs); len(got) != 1 {
				t.Fatalf("c claimed %v", got)
			}
		})
	}
}

// TestCancelRunningResent: cancelling a running job of a concurrency
// key under a lost reply or a double delivery moves its fence once and
// frees its slot once: two more jobs of the key are not both leased.
func TestCancelRunningResent(t *testing.T) {
	t.Parallel()
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			l := newLossy(t)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			l.enqueue(store.NewJob{Local: "a", Limits: lim, Sticky: store.Sticky{Worker: "b", Mode: "w"}})
			j := l.claimOne("b")
			check := l.fault(kind)
			prev, err := l.st.Cancel(l.ctx, keys.Ref{Partition: l.p, Local: "a"}, retainCancelled)
			check()
			if err != nil || prev != "running" {
				t.Fatalf("cancel: %q %v", prev, err)
			}
			if got, _ := l.get("a"); got.Fence != j.Fence+1 || got.State != "cancelled" {
				t.Fatalf("after cancel: fence %d (claimed with %d), state %s", got.Fence, j.Fence, got.State)
			}
			l.enqueue(store.NewJob{Local: "x", Limits: lim}, store.NewJob{Local: "y", Limits: lim})
			if got := locals(l.claim(10, "w").Jobs); len(got) != 1 {
				t.Fatalf("claimed %v with k's limit 1", got)
			}
		})
	}
}

// TestFailAfterRateWaiterPassesToken: a rate waiter pinned to a worker
// that went away (FailAfter) is let go by a token to that worker's list,
// and archived there by its fallback (sticky_unavailable): the class's
// next waiter does not wait for the class's next wake, an hour on, with
// the token unspent (docs/state-machine.md: a waiter let go that leaves
// before a claim leases it lets the next waiter go).
func TestFailAfterRateWaiterPassesToken(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			if l := locals(f.claim(10, "w").Jobs); !l["r0"] {
				t.Fatalf("first claim %v", l)
			}
			f.enqueue(store.NewJob{Local: "p", Limits: rl, Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Minute}})
			if got := f.claim(10, "gone"); len(got.Jobs) != 0 { // p waits on the class; "gone" dies
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			f.enqueue(store.NewJob{Local: "u", Limits: rl})
			if got := f.claim(10, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %v", locals(got.Jobs))
			}
			f.clk.Advance(time.Hour) // a token: p goes to gone's list, its FailAfter starts
			got := locals(f.claim(10, "w").Jobs)
			f.clk.Advance(time.Minute + time.Second)
			res := f.claim(10, "w") // p archived: sticky_unavailable
			archived := false
			for _, pk := range res.Parked {
				archived = archived || (pk.Local == "p" && pk.Reason == "sticky_unavailable")
			}
			for k := range locals(res.Jobs) {
				got[k] = true
			}
			for k := range claimRounds(f, time.Second) {
				got[k] = true
			}
			if !archived || !got["u"] {
				t.Fatalf("p archived by its fallback: %v (%+v); then claimed %v: u waits for the class's next wake with the token p left unspent",
					archived, res.Parked, got)
			}
		})
	}
}

// TestDeadHolderFallbackOnce: the preferred worker dies holding its
// pinned job (After 1m). The reaper charges a crash and puts it back on
// that worker's list after the crash delay; the fallback hands it to
// another worker exactly d after it became available again, not before;
// the dead worker's stale acks are refused; the worker returning under
// the same ID finds nothing to run twice.
func TestDeadHolderFallbackOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "b", Mode: "a", After: time.Minute}})
			old := f.claimOne("b")
			f.clk.Advance(time.Hour) // b's lease expired: b died
			if r, err := f.reap(10); err != nil || len(r) != 1 {
				t.Fatalf("reap: %+v %v", r, err)
			}
			f.clk.Advance(time.Second) // the crash delay
			if got := locals(f.claim(10, "a").Jobs); len(got) != 0 {
				t.Fatalf("a claimed %v at once", got)
			}
			f.clk.Advance(time.Minute - 2*time.Millisecond)
			if got := locals(f.claim(10, "a").Jobs); len(got) != 0 {
				t.Fatalf("a claimed %v before the fallback's delay", got)
			}
			f.clk.Advance(10 * time.Millisecond)
			res := f.claim(10, "a")
			if got := locals(res.Jobs); len(got) != 1 || !got["j"] {
				t.Fatalf("a claimed %v after the fallback's delay", got)
			}
			if r := f.ack(old, store.Ack{Code: store.CodeOK}); r.Err == nil {
				t.Fatalf("the dead holder's ack was taken: %+v", r)
			}
			if got := locals(f.claim(10, "b").Jobs); len(got) != 0 {
				t.Fatalf("b, back under its ID, claimed %v while a runs it", got)
			}
			if r := f.ack(res.Jobs[0], store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
				t.Fatalf("a's ack: %+v", r)
			}
			if n, _ := f.rdb.ZCard(f.ctx, f.p.PinDeadlines()).Result(); n != 0 {
				t.Fatalf("pinx holds %d after completion", n)
			}
		})
	}
}
