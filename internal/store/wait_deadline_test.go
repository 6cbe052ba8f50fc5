package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A job that waits on its concurrency key's or rate class's wait list and
// has a deadline is listed in pinx at its deadline by the claim that sets
// it waiting, and archived then (deadline_exceeded) by the first claim of
// its partition, its wait-list entry taken with it and a parent joining
// it told, as a pinned job's is. Before, it was archived only once its
// key or class let it go and a claim met it: with a key held by long
// jobs, hours after its deadline.

// slowRate lets one job go an hour: its waiter waits past any deadline
// the tests set.
var slowRate = store.Limits{RateClass: "slow", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}

// waitList is the wait list a job of lim waits on.
func (f *fixture) waitList(lim store.Limits) string {
	if lim.ConcurrencyKey != "" {
		return f.p.ConcurrencyWait(lim.ConcurrencyKey)
	}
	return f.p.RateWait(lim.RateClass)
}

// pinx is the content of the partition's pinx, member: score (ms).
func (f *fixture) pinx() map[string]int64 {
	f.t.Helper()
	zs, err := f.rdb.ZRangeWithScores(f.ctx, f.p.PinDeadlines(), 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, z := range zs {
		out[z.Member.(string)] = int64(z.Score)
	}
	return out
}

// TestWaiterMeetsItsDeadline: a waiter with a deadline is archived at its
// deadline by a claim of any worker while the job ahead of it still
// holds its key's slot or its class's token; off its wait list (the key's
// waiter count with it), out of pinx, its remote parent told through the
// outbox. A waiter with no deadline is not listed in pinx, and waits on.
func TestWaiterMeetsItsDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, lim := range []store.Limits{oneAtATime, slowRate} {
			t.Run(fmt.Sprintf("%s/%s%s", b.name, lim.ConcurrencyKey, lim.RateClass), func(t *testing.T) {
				f := newFixture(t, b)
				dl := f.clk.Now().Add(10 * time.Second) // within a's lease
				parent := keys.Ref{Partition: f.st.Partition("elsewhere", 0), Local: "P"}
				f.enqueue(store.NewJob{Local: "a", Limits: lim},
					store.NewJob{Local: "w", Limits: lim, Deadline: dl, Parent: &store.ParentRef{Ref: parent, Step: "s"}},
					store.NewJob{Local: "x", Limits: lim})
				a := f.claimOne("w1")
				if a.Local != "a" {
					t.Fatalf("claimed %s, want a", a.Local)
				}
				if got := f.leased("w1"); got != "[]" {
					t.Fatalf("claimed %s over the limit", got)
				}
				if got := fmt.Sprint(f.list(f.waitList(lim))); got != "[w x]" {
					t.Fatalf("wait list %s, want [w x]", got)
				}
				f.clk.Advance(10 * time.Second)
				res := f.claim(10, "w2")
				if len(res.Jobs) != 0 || len(res.Parked) != 1 || res.Parked[0].Local != "w" || res.Parked[0].Reason != "deadline_exceeded" {
					t.Fatalf("at the deadline claimed %v, parked %v; want w archived deadline_exceeded", locals(res.Jobs), res.Parked)
				}
				if got, _ := f.get("w"); got.State != "archived" || got.Reason != "deadline_exceeded" {
					t.Fatalf("w is %s (%s)", got.State, got.Reason)
				}
				if got := fmt.Sprint(f.list(f.waitList(lim))); got != "[x]" {
					t.Errorf("wait list %s, want [x]", got)
				}
				if lim.ConcurrencyKey != "" {
					f.checkCCWait("k", "[x]")
				}
				if got := f.pinx(); len(got) != 0 {
					t.Errorf("pinx %v, want empty", got)
				}
				msgs, err := f.rdb.XRange(f.ctx, f.p.Outbox(), "-", "+").Result()
				if err != nil || len(msgs) != 1 || msgs[0].Values["c"] != "w" || msgs[0].Values["st"] != "archived" {
					t.Fatalf("outbox %v (%v), want w archived told to its parent", msgs, err)
				}
				// the key's slot and the class's token are a's still: x
				// goes once a ends (the key) or an hour on (the class)
				f.ack(a, store.Ack{Code: store.CodeOK})
				if lim.RateClass != "" {
					f.clk.Advance(time.Hour)
				}
				if got := f.leased("w1"); got != "[x]" {
					t.Fatalf("after a: %s, want [x]", got)
				}
			})
		}
	}
}

// TestWaiterLeavesNoDeadlineBehind: a waiter with a deadline that leaves
// its wait list before it (let go, cancelled, deleted, rerouted,
// debounced) takes its pinx entry along, or is listed at its deadline
// still where it still waits (rerouted); an entry left behind kept every
// claim of the partition reading the timed indexes until the deadline,
// and its job, let go and run, could be archived by it.
func TestWaiterLeavesNoDeadlineBehind(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, lim := range []store.Limits{oneAtATime, slowRate} {
			for _, how := range []string{"letgo", "cancel", "delete", "reroute", "unpin", "debounce"} {
				t.Run(fmt.Sprintf("%s/%s%s/%s", b.name, lim.ConcurrencyKey, lim.RateClass, how), func(t *testing.T) {
					f := newFixture(t, b)
					dl := f.clk.Now().Add(2 * time.Hour)
					w := store.NewJob{Local: "w", Limits: lim, Deadline: dl, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}}
					if how == "unpin" {
						w.Sticky = store.Sticky{Worker: "w1", Mode: "a", After: time.Minute}
					}
					f.enqueue(store.NewJob{Local: "a", Limits: lim}, w)
					a := f.claimOne("w0")
					if got := f.leased("w1"); got != "[]" {
						t.Fatalf("claimed %s over the limit", got)
					}
					if got := f.pinx(); len(got) != 1 || got["w"] != dl.UnixMilli() {
						t.Fatalf("pinx %v, want w at its deadline", got)
					}
					wantPinx := 0
					switch how {
					case "letgo":
						f.ack(a, store.Ack{Code: store.CodeOK})
						if lim.RateClass != "" {
							f.clk.Advance(time.Hour)
						}
						j := f.claimOne("w1")
						if j.Local != "w" {
							t.Fatalf("claimed %s, want w", j.Local)
						}
						f.ack(j, store.Ack{Code: store.CodeOK})
					case "cancel", "delete":
						f.leave(how, "w")
					case "reroute", "unpin":
						to := store.Sticky{Worker: "w2", Mode: "w"}
						if how == "unpin" {
							to = store.Sticky{}
						}
						if _, err := f.st.Reroute(f.ctx, f.ref("w"), to); err != nil {
							t.Fatal(err)
						}
						wantPinx = 1 // it waits still, its deadline as it was
					case "debounce":
						res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "w2", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
							Delay: time.Minute, Limits: lim, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}}})
						if err != nil || res[0].Status != store.Held || res[0].Existing != "w" {
							t.Fatalf("debounce: %+v %v", res, err)
						}
					}
					if got := f.pinx(); len(got) != wantPinx || wantPinx == 1 && got["w"] != dl.UnixMilli() {
						t.Fatalf("pinx %v after %s, want %d entries (w at its deadline)", got, how, wantPinx)
					}
				})
			}
		}
	}
}

// TestWaiterLetGoBehindMarkLeavesNoDeadline: a rate class's pass that
// lets a dated waiter go behind a waiter an earlier pass let go, still on
// the shared list with its token promised (lib_limits.lua let_go's mark),
// takes its pinx entry too, as one let go to the front does.
func TestWaiterLetGoBehindMarkLeavesNoDeadline(t *testing.T) {
	t.Parallel()
	lim := store.Limits{RateClass: "b", RateJobs: 1, RatePer: time.Second, RateBurst: 3}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			dl := f.clk.Now().Add(time.Hour)
			f.enqueue(store.NewJob{Local: "r0", Limits: lim}, store.NewJob{Local: "r1", Limits: lim},
				store.NewJob{Local: "r2", Limits: lim}, store.NewJob{Local: "w1", Limits: lim},
				store.NewJob{Local: "w2", Limits: lim}, store.NewJob{Local: "w3", Limits: lim, Deadline: dl})
			if got := f.leased("w"); got != "[r0 r1 r2]" {
				t.Fatalf("first claim %s, want [r0 r1 r2]", got)
			}
			if got := f.pinx(); len(got) != 1 || got["w3"] != dl.UnixMilli() {
				t.Fatalf("pinx %v, want w3 at its deadline", got)
			}
			// 2.5 tokens: w1 and w2 let go, w1 claimed, w2 left with its
			// token promised for a second (the mark), half a token free
			f.clk.Advance(2500 * time.Millisecond)
			if j := f.claimOne("w"); j.Local != "w1" {
				t.Fatalf("claimed %s, want w1", j.Local)
			}
			// a token free while w2's promise stands: w3 goes behind w2
			f.clk.Advance(600 * time.Millisecond)
			if got := f.pinx(); len(got) != 1 {
				t.Fatalf("pinx %v before the pass, want w3", got)
			}
			if j := f.claimOne("w"); j.Local != "w2" {
				t.Fatalf("claimed %s, want w2", j.Local)
			}
			if got := f.availableOrder(0); fmt.Sprint(got) != "[w3]" {
				t.Fatalf("available %v, want [w3]", got)
			}
			if got := f.pinx(); len(got) != 0 {
				t.Errorf("pinx %v, want empty", got)
			}
		})
	}
}
