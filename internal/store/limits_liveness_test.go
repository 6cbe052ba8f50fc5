package store_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestConcurrencyKeyNeverStrandsWaiters is the class test of the lost
// turns fixed one by one in limits_turns_test.go: random runs of jobs of
// one concurrency key (some with a deadline that passes while they wait,
// some of a rate class, some cancelled while they wait or once let go),
// claimed, acked and cancelled in random order. After every step, and
// the claims that follow it settle, a key with a free slot has no job
// left on its wait list: a waiter never waits while its key has room.
func TestConcurrencyKeyNeverStrandsWaiters(t *testing.T) {
	t.Parallel()
	const limit = 2
	for _, b := range backends(t) {
		for seed := uint64(1); seed <= 16; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", b.name, seed), func(t *testing.T) {
				f := newFixture(t, b)
				rng := rand.New(rand.NewPCG(seed, 7))
				lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: limit}
				rated := withRate(lim, store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Minute, RateBurst: 1})
				running := map[string]*store.Job{}
				var waiting []string // enqueued, not leased yet
				n := 0
				settle := func(step string) {
					t.Helper()
					// claim until a claim leases nothing and says nothing is
					// due now: each rated waiter a claim parks lets the next
					// waiter go, ready at once (NextDue 0), so a run of them
					// takes as many claims
					for k := 0; ; k++ {
						if k == 200 {
							t.Fatalf("after %s: 200 claims, and still jobs due now", step)
						}
						res := f.claim(10, "w")
						for _, j := range res.Jobs {
							running[j.Local] = j
						}
						if len(res.Jobs) == 0 && !(res.Scheduled && res.NextDue == 0) {
							break
						}
					}
					cc, _ := f.rdb.HGet(f.ctx, f.p.Concurrency(), "k").Int()
					w := f.rdb.LRange(f.ctx, f.p.ConcurrencyWait("k"), 0, -1).Val()
					if cc < limit && len(w) > 0 {
						t.Fatalf("after %s: the key runs %d of %d, and %v wait on it", step, cc, limit, w)
					}
				}
				for i := range 60 {
					switch op := rng.IntN(5); {
					case op <= 1: // enqueue a few
						for range 1 + rng.IntN(3) {
							n++
							j := store.NewJob{Local: fmt.Sprint("j", n), Limits: lim}
							if rng.IntN(3) == 0 {
								j.Deadline = f.clk.Now().Add(time.Duration(1+rng.IntN(3)) * time.Second)
							}
							if rng.IntN(4) == 0 {
								j.Limits = rated
							}
							f.enqueue(j)
							waiting = append(waiting, j.Local)
						}
					case op == 2: // finish a running job
						if ids := slices.Sorted(maps.Keys(running)); len(ids) > 0 {
							id := ids[rng.IntN(len(ids))] // not map order: a seed replays
							f.ack(running[id], store.Ack{Code: store.CodeOK})
							delete(running, id)
						}
					case op == 3: // cancel a job that may wait, or be let go
						if len(waiting) > 0 {
							k := rng.IntN(len(waiting))
							if _, ok := running[waiting[k]]; !ok {
								_, _ = f.st.Cancel(f.ctx, f.ref(waiting[k]), time.Hour) // it may have run and finished
							}
							waiting = append(waiting[:k], waiting[k+1:]...)
						}
					default:
						f.clk.Advance(time.Duration(1+rng.IntN(20)) * time.Second)
					}
					settle(fmt.Sprint("step ", i))
				}
			})
		}
	}
}
