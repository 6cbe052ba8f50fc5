package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestRateLetsGoNoMoreThanTokens: 3000 jobs wait on a class whose bucket
// then holds 1500 tokens; a job v of the class that never waited may take
// one of them meanwhile. Passes of promote_rated with no claim of the
// class between them let no more than 1500 go (not every waiter: one let
// go past the tokens waits again at the back when claimed), and the
// first 1400 waiters run first (the last few of the 1500 may be the ones
// v's token leaves waiting again).
func TestRateLetsGoNoMoreThanTokens(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			slow := store.Limits{RateClass: "c", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r0", Limits: slow})
			if l := locals(f.claim(10, "w").Jobs); !l["r0"] {
				t.Fatalf("first claim %v", l)
			}
			var ws []store.NewJob
			for i := range 3000 {
				ws = append(ws, store.NewJob{Local: fmt.Sprintf("u%04d", i), Limits: slow})
			}
			f.enqueue(ws...)
			if got := f.claim(5000, "w"); len(got.Jobs) != 0 {
				t.Fatalf("claimed over the rate: %d", len(got.Jobs))
			}
			// the class's rate raised: 1500 a second, burst 1500
			fast := store.Limits{RateClass: "c", RateJobs: 1500, RatePer: time.Second, RateBurst: 1500}
			var his []store.NewJob
			for i := range 10 {
				his = append(his, store.NewJob{Local: fmt.Sprintf("hi%d", i), Priority: 9})
			}
			f.enqueue(append([]store.NewJob{{Local: "v", Priority: 9, Limits: fast}}, his...)...)
			f.clk.Advance(2 * time.Second) // the bucket full: 1500 tokens
			// claims of one priority-9 job each: promotion passes, no token spent
			for range 4 {
				j := f.claimOne("w")
				if j.Local == "v" {
					t.Logf("v took a token")
				}
			}
			shared := f.availableOrder(0)
			wl, _ := f.rdb.LRange(f.ctx, f.p.RateWait("c"), 0, -1).Result()
			t.Logf("after 4 promotion passes (clock still): %d waiters let go to the shared list, %d still waiting; the bucket holds at most 1500 tokens",
				len(shared), len(wl))
			if len(shared) > 1500 {
				t.Errorf("promote_rated let %d waiters go with at most 1500 tokens: each MAX_POP pass reckons from the bucket afresh", len(shared))
			}
			// what the over-release does to order: claim everything now
			ran := map[string]bool{}
			for _, j := range f.claim(5000, "w").Jobs {
				ran[j.Local] = true
			}
			late := 0
			for i := range 1400 {
				if !ran[fmt.Sprintf("u%04d", i)] {
					late++
				}
			}
			wl, _ = f.rdb.LRange(f.ctx, f.p.RateWait("c"), 0, -1).Result()
			t.Logf("claimed %d; of the first 1400 waiters %d did not run and wait again; wait list now %d long, head %v", len(ran), late, len(wl), head(wl, 3))
			if late > 0 {
				t.Errorf("%d of the first 1400 waiters (FIFO) did not run with 1500 tokens: later waiters let go past the tokens overtook them", late)
			}
		})
	}
}

func head(s []string, n int) []string {
	if len(s) < n {
		return s
	}
	return s[:n]
}
