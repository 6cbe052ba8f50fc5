package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimWithOwnPinListCorrupt: a claim pops the claiming worker's own
// pin list first (claim.lua take(pin_key(worker))), then the shared
// lists; that LPOP was a redis.call, and a key that holds no list made it
// raise after promote, promote_rated and promote_pinned wrote: a due job
// was promoted but the state counters and the FailAfter job's
// terminal/death index entries (deferred to flush) were lost, and no
// claim of that worker ever succeeded again (a corrupt shared list
// stopped every worker). (TestOperatorCallsPassCorruptKeys covers
// another worker's pin list.) Now the claim sets the list's value aside
// and goes on: it leases the due job and archives the FailAfter one.
func TestClaimWithOwnPinListCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "due", Delay: time.Second},
				store.NewJob{Local: "pinf", Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Second}})
			pk := f.p.Pinned("w")
			f.overwrite(pk)
			f.clk.Advance(2 * time.Second)
			for try := range 2 {
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n" + string(rune('0'+try)), PromoteLimit: 100})
				if err != nil {
					_, dead := f.score(f.p.Terminal("archived"), "pinf")
					t.Fatalf("claim %d: %v (pinf is %q, in the archived set: %v; stats %v)", try, err, f.rawState("pinf"), dead, f.stats())
				}
				if try == 0 && (len(res.Jobs) != 1 || res.Jobs[0].Local != "due") {
					t.Fatalf("claimed %+v, want due", res.Jobs)
				}
			}
			if _, dead := f.score(f.p.Terminal("archived"), "pinf"); !dead || f.rawState("pinf") != "archived" {
				t.Errorf("pinf is %q, in the archived set: %v; want archived", f.rawState("pinf"), dead)
			}
			if s := f.stats(); s["running"] != 1 || s["archived"] != 1 || s["available"] != 0 || s["scheduled"] != 0 {
				t.Errorf("stats %v, want 1 running, 1 archived", s)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideList, pk, 1)).Val(); v != "overwritten" {
				t.Errorf("set aside %q, want the overwritten value", v)
			}
		})
		t.Run(b.name+"/shared list", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "hi", Priority: 3}, store.NewJob{Local: "lo"})
			lk := f.p.Available(0)
			f.overwrite(lk)
			if got := f.claimed("n1"); !slices.Equal(got, []string{"hi"}) {
				t.Errorf("claimed %v, want hi (lo was on the list overwritten)", got)
			}
			if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideList, lk, 1)).Val(); v != "overwritten" {
				t.Errorf("set aside %q, want the overwritten value", v)
			}
			f.enqueue(store.NewJob{Local: "next"})
			if got := f.claimed("n2"); !slices.Equal(got, []string{"next"}) {
				t.Errorf("claimed %v, want next", got)
			}
		})
	}
}
