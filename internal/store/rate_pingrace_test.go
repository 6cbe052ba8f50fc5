package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestPinGraceBusyWorkerKeepsJob: p waits on a class of 1 an hour,
// pinned to pw (live, but busy: it claims nothing for a while), u0 behind
// it. The token lets p go to pw's list; after PIN_GRACE the token passes
// to u0; pw, claiming at last, finds no token and p waits again; the next
// token lets p go to pw, which runs it. p is never lost nor run over the
// rate.
func TestPinGraceBusyWorkerKeepsJob(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: rl})
			f.claim(10, "other")
			f.enqueue(store.NewJob{Local: "p", Limits: rl, Sticky: store.Sticky{Worker: "pw", Mode: "w"}})
			f.claim(10, "pw")
			f.enqueue(store.NewJob{Local: "u0", Limits: rl})
			f.claim(10, "other")
			f.clk.Advance(time.Hour)
			var ran []string
			claim := func(w string) {
				for _, j := range f.claim(10, w).Jobs {
					ran = append(ran, w+":"+j.Local)
				}
			}
			claim("other") // p let go to pw's list
			f.clk.Advance(1500 * time.Millisecond)
			claim("other") // PIN_GRACE over: u0 goes
			claim("other")
			claim("pw") // busy until now: p finds no token
			if len(ran) != 1 || ran[0] != "other:u0" {
				t.Fatalf("ran %v; want other:u0 only", ran)
			}
			j, _ := f.get("p")
			wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
			t.Logf("p: %s, wait list %v", j.State, wl)
			for h := 0; h < 3; h++ {
				f.clk.Advance(time.Hour)
				claim("other")
				claim("pw")
			}
			if len(ran) != 2 || ran[1] != "pw:p" {
				j, _ := f.get("p")
				wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("slow"), 0, -1).Result()
				t.Fatalf("ran %v; p is %s (wait list %v, pw's list %v); want pw:p next", ran, j.State, wl, func() []string { l, _ := f.rdb.LRange(f.ctx, f.p.Pinned("pw"), 0, -1).Result(); return l }())
			}
		})
	}
}
