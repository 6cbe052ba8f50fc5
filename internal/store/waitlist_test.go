package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A job that waits on its concurrency key or its rate class is available,
// and listed once: on the key's or class's wait list, not on a ready list.
// The tests here move such a job (reroute, cancel, delete, debounce, a
// claim that parks it, a sticky fallback) and check that it stays listed
// once: an entry left behind on a wait list spends a rate class's token
// on a job that is not there, or lists the job twice.

// list is the content of list key, head first.
func (f *fixture) list(key string) []string {
	f.t.Helper()
	ids, err := f.rdb.LRange(f.ctx, key, 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// ccWaiting is the waiter count of concurrency key k (keys.Partition
// ConcurrencyWaiting), which must equal the length of its wait list.
func (f *fixture) ccWaiting(k string) int {
	f.t.Helper()
	n, _ := f.rdb.HGet(f.ctx, f.p.ConcurrencyWaiting(), k).Int()
	return n
}

// leased claims for worker and returns the IDs it leased, in order, as
// one string.
func (f *fixture) leased(worker string) string {
	f.t.Helper()
	var ids []string
	for _, j := range f.claim(10, worker).Jobs {
		ids = append(ids, j.Local)
	}
	return fmt.Sprint(ids)
}

// count is how many IDs list, as leased formats them, holds.
func count(list string) int { return len(strings.Fields(strings.Trim(list, "[]"))) }

// checkCCWait reports an error unless the wait list of concurrency key k
// is want (as leased formats it) and its waiter count says as many.
func (f *fixture) checkCCWait(k, want string) {
	f.t.Helper()
	if got := fmt.Sprint(f.list(f.p.ConcurrencyWait(k))); got != want || f.ccWaiting(k) != count(want) {
		f.t.Errorf("wait list %s, count %d: want %s, %d", got, f.ccWaiting(k), want, count(want))
	}
}

var (
	oneAtATime = store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
	onePerSec  = store.Limits{RateClass: "smtp", RateJobs: 1, RatePer: time.Second, RateBurst: 1}
)

// TestRerouteWaitingJob: rerouting a job that waits on its rate class or
// concurrency key leaves it in its place on the wait list, where it goes
// to its new worker when its turn comes; it is not listed again, which
// would make a second wait-list entry, a token spent on nothing.
func TestRerouteWaitingJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/rate", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "r0", Limits: onePerSec}, store.NewJob{Local: "r1", Limits: onePerSec},
				store.NewJob{Local: "r2", Limits: onePerSec})
			if got := f.leased("w"); got != "[r0]" {
				t.Fatalf("first claim %s, want [r0]", got)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("r1"), store.Sticky{Worker: "w2", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if got := f.leased("w2"); got != "[]" {
				t.Fatalf("w2 claimed %s with no token", got)
			}
			f.enqueue(store.NewJob{Local: "r3", Limits: onePerSec})
			if got := f.leased("w"); got != "[]" {
				t.Fatalf("claimed %s with no token", got)
			}
			if got := fmt.Sprint(f.list(f.p.RateWait("smtp"))); got != "[r1 r2 r3]" {
				t.Errorf("rate wait list %s, want [r1 r2 r3]", got)
			}
			for i, want := range []string{"r1", "r2", "r3"} {
				f.clk.Advance(time.Second)
				worker := "w"
				if want == "r1" {
					worker = "w2"
					if got := f.leased("w"); got != "[]" {
						t.Fatalf("w claimed %s, the token goes to r1 (pinned to w2)", got)
					}
				}
				if got := f.leased(worker); got != "["+want+"]" {
					t.Fatalf("second %d: %s claimed %s, want [%s]", i+1, worker, got, want)
				}
			}
		})
		t.Run(b.name+"/concurrency", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime}, store.NewJob{Local: "b", Limits: oneAtATime},
				store.NewJob{Local: "c", Limits: oneAtATime})
			a := f.claimOne("w")
			if got := f.leased("w"); got != "[]" { // b and c wait on k
				t.Fatalf("claimed %s over the limit", got)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("b"), store.Sticky{Worker: "w2", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if got := f.leased("w2"); got != "[]" {
				t.Fatalf("w2 claimed %s over the limit", got)
			}
			f.checkCCWait("k", "[b c]")
			f.ack(a, store.Ack{Code: store.CodeOK}) // b goes, to w2's list
			if got := f.list(f.p.Pinned("w2")); fmt.Sprint(got) != "[b]" {
				t.Fatalf("w2's list %v, want [b]", got)
			}
			b := f.claimOne("w2")
			if got := f.leased("w"); got != "[]" { // c waits again
				t.Fatalf("w claimed %s over the limit", got)
			}
			f.ack(b, store.Ack{Code: store.CodeOK})
			if got := f.leased("w"); got != "[c]" {
				t.Fatalf("after b: %s, want [c]", got)
			}
			if got := f.list(f.p.ConcurrencyWait("k")); len(got) != 0 || f.ccWaiting("k") != 0 {
				t.Fatalf("wait list %v, count %d left after every job ran", got, f.ccWaiting("k"))
			}
		})
	}
}

// TestLeavingWaiterLeavesWaitList: a job cancelled or deleted while it
// waits on its rate class or concurrency key leaves the wait list with
// it: the class's next token goes to the next waiter, not to the entry of
// a job that is gone, and a job cancelled and redriven is listed once.
func TestLeavingWaiterLeavesWaitList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, leave := range []string{"cancel", "delete", "cancel+redrive"} {
			t.Run(b.name+"/"+leave+"/rate", func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "r0", Limits: onePerSec}, store.NewJob{Local: "r1", Limits: onePerSec},
					store.NewJob{Local: "r2", Limits: onePerSec})
				if got := f.leased("w"); got != "[r0]" {
					t.Fatalf("first claim %s, want [r0]", got)
				}
				f.leave(leave, "r1")
				want := "[r2]"
				if leave == "cancel+redrive" {
					if got := f.leased("w"); got != "[]" { // r1 waits again, behind r2
						t.Fatalf("claimed %s with no token", got)
					}
					if got := fmt.Sprint(f.list(f.p.RateWait("smtp"))); got != "[r2 r1]" {
						t.Errorf("rate wait list %s, want [r2 r1]", got)
					}
				} else if got := fmt.Sprint(f.list(f.p.RateWait("smtp"))); got != "[r2]" {
					t.Errorf("rate wait list %s, want [r2]", got)
				}
				f.clk.Advance(time.Second)
				if got := f.leased("w"); got != want {
					t.Fatalf("after a second: %s, want %s", got, want)
				}
				if leave == "cancel+redrive" {
					f.clk.Advance(time.Second)
					if got := f.leased("w"); got != "[r1]" {
						t.Fatalf("after two seconds: %s, want [r1]", got)
					}
				}
			})
			t.Run(b.name+"/"+leave+"/concurrency", func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime}, store.NewJob{Local: "b", Limits: oneAtATime},
					store.NewJob{Local: "c", Limits: oneAtATime})
				a := f.claimOne("w")
				if got := f.leased("w"); got != "[]" { // b and c wait on k
					t.Fatalf("claimed %s over the limit", got)
				}
				f.leave(leave, "b")
				want := "[c]"
				if leave == "cancel+redrive" {
					if got := f.leased("w"); got != "[]" { // b waits again, behind c
						t.Fatalf("claimed %s over the limit", got)
					}
					want = "[c b]"
				}
				f.checkCCWait("k", want)
				f.ack(a, store.Ack{Code: store.CodeOK})
				if got := f.leased("w"); got != "[c]" {
					t.Fatalf("after a: %s, want [c]", got)
				}
			})
		}
	}
}

// leave takes the available job local away as the test names it: cancel,
// delete, or cancel then redrive.
func (f *fixture) leave(how, local string) {
	f.t.Helper()
	switch how {
	case "cancel", "cancel+redrive":
		if _, err := f.st.Cancel(f.ctx, f.ref(local), retainCancelled); err != nil {
			f.t.Fatal(err)
		}
		if how == "cancel+redrive" {
			errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{local})
			if err != nil || errs[0] != nil {
				f.t.Fatalf("redrive: %v %v", err, errs)
			}
		}
	case "delete":
		if _, err := f.st.Delete(f.ctx, f.ref(local)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestDebounceWaitingJob: a duplicate that debounces a unique job waiting
// on its concurrency key or rate class takes it off the wait list, and
// one whose key let it go already passes the key's turn on, so that the
// other waiters do not wait for the debounced job's new run time.
func TestDebounceWaitingJob(t *testing.T) {
	t.Parallel()
	debounce := func(f *fixture, lim store.Limits) {
		f.t.Helper()
		res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b2", Kind: "k", Payload: []byte("x"), MaxAttempts: 3,
			Delay: time.Minute, Limits: lim, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}}})
		if err != nil || res[0].Status != store.Held || res[0].Existing != "b" {
			f.t.Fatalf("debounce: %+v %v", res, err)
		}
		if got, _ := f.get("b"); got.State != "scheduled" {
			f.t.Fatalf("debounced b is %s", got.State)
		}
	}
	for _, b := range backends(t) {
		t.Run(b.name+"/rate", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "r0", Limits: onePerSec},
				store.NewJob{Local: "b", Limits: onePerSec, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}},
				store.NewJob{Local: "c", Limits: onePerSec})
			if got := f.leased("w"); got != "[r0]" {
				t.Fatalf("first claim %s, want [r0]", got)
			}
			debounce(f, onePerSec)
			if got := fmt.Sprint(f.list(f.p.RateWait("smtp"))); got != "[c]" {
				t.Errorf("rate wait list %s, want [c]", got)
			}
			f.clk.Advance(time.Second)
			if got := f.leased("w"); got != "[c]" {
				t.Fatalf("after a second: %s, want [c]", got)
			}
		})
		// run now after the debounce: b is listed once, and waits for a
		// token behind c, which waited before it came back
		t.Run(b.name+"/rate+runnow", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "r0", Limits: onePerSec},
				store.NewJob{Local: "b", Limits: onePerSec, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}},
				store.NewJob{Local: "c", Limits: onePerSec})
			if got := f.leased("w"); got != "[r0]" {
				t.Fatalf("first claim %s, want [r0]", got)
			}
			debounce(f, onePerSec)
			if _, err := f.st.RunNow(f.ctx, f.ref("b")); err != nil {
				t.Fatal(err)
			}
			if got := f.leased("w"); got != "[]" {
				t.Fatalf("claimed %s with no token", got)
			}
			if got := fmt.Sprint(f.list(f.p.RateWait("smtp"))); got != "[c b]" {
				t.Errorf("rate wait list %s, want [c b]", got)
			}
			for _, want := range []string{"[c]", "[b]", "[]"} {
				f.clk.Advance(time.Second)
				if got := f.leased("w"); got != want {
					t.Fatalf("a second on: %s, want %s", got, want)
				}
			}
		})
		for _, woken := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/concurrency/woken=%v", b.name, woken), func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime},
					store.NewJob{Local: "b", Limits: oneAtATime, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}},
					store.NewJob{Local: "c", Limits: oneAtATime})
				a := f.claimOne("w")
				if got := f.leased("w"); got != "[]" { // b and c wait on k
					t.Fatalf("claimed %s over the limit", got)
				}
				if woken {
					f.ack(a, store.Ack{Code: store.CodeOK}) // b goes
				}
				debounce(f, oneAtATime)
				want := "[c]"
				if woken {
					want = "[]" // c went in b's place
				}
				f.checkCCWait("k", want)
				if !woken {
					f.ack(a, store.Ack{Code: store.CodeOK})
				}
				if got := f.leased("w"); got != "[c]" {
					t.Fatalf("after a: %s, want [c]", got)
				}
			})
		}
	}
}

// TestClaimParkKeepsRateToken: a claim that takes a rate token for a job
// and then archives it as malformed (its checkpoints key holds no hash)
// gives the token back: the class's next job runs in the same claim.
func TestClaimParkKeepsRateToken(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad", Limits: onePerSec})
			f.enqueue(store.NewJob{Local: "good", Limits: onePerSec})
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldHasSteps, "1")
			f.overwrite(f.p.Steps("bad"))
			res := f.claim(10, "w")
			if len(res.Parked) != 1 || res.Parked[0].Local != "bad" {
				t.Fatalf("parked %v, want bad", res.Parked)
			}
			if got := fmt.Sprint(locals(res.Jobs)); got != "map[good:true]" {
				t.Fatalf("leased %s, want good: the token bad took is back", got)
			}
		})
	}
}

// TestPinnedWaiterKeepsItsPlace: a pinned job that its worker claimed, and
// that waits on its concurrency key, is no longer waiting for its worker:
// its sticky fallback does not fail it, or list it a second time, while
// it waits; it starts over when the key lets it go.
func TestPinnedWaiterKeepsItsPlace(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, mode := range []string{"a", "f"} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime})
				a := f.claimOne("w")
				f.enqueue(store.NewJob{Local: "p", Limits: oneAtATime, Sticky: store.Sticky{Worker: "w", Mode: mode, After: time.Second}})
				if got := f.leased("w"); got != "[]" { // p waits on k
					t.Fatalf("claimed %s over the limit", got)
				}
				f.clk.Advance(2 * time.Second) // past p's fallback, within a's lease
				res := f.claim(10, "w2")
				if len(res.Jobs) != 0 || len(res.Parked) != 0 {
					t.Fatalf("w2 claimed %v, parked %v: p waits on its key", locals(res.Jobs), res.Parked)
				}
				f.checkCCWait("k", "[p]")
				f.ack(a, store.Ack{Code: store.CodeOK}) // p goes to w's list
				if got := f.leased("w2"); got != "[]" {
					t.Fatalf("w2 claimed %s, p is w's", got)
				}
				if got := f.leased("w"); got != "[p]" {
					t.Fatalf("w claimed %s, want [p]", got)
				}
			})
		}
	}
}

// TestRerouteToSameListListsOnce: rerouting an available job to the list
// that holds it already (unpinned to unpinned, or to the worker it is
// pinned to) lists it once: a second live entry let two claims set it
// waiting on its key twice.
func TestRerouteToSameListListsOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, to := range []string{"", "w"} {
			t.Run(b.name+"/to="+to, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime})
				a := f.claimOne("w")
				st := store.Sticky{}
				if to != "" {
					st = store.Sticky{Worker: to, Mode: "w"}
				}
				// x, listed before j on j's list, then j
				f.enqueue(store.NewJob{Local: "x", Sticky: st}, store.NewJob{Local: "j", Limits: oneAtATime, Sticky: st})
				if _, err := f.st.Reroute(f.ctx, f.ref("j"), st); err != nil {
					t.Fatal(err)
				}
				// a claim of one sets j waiting and leases x; the next
				// finds j listed again, and sets it waiting again
				if res := f.claim(1, "w"); len(res.Jobs) != 1 || res.Jobs[0].Local != "x" {
					t.Fatalf("claimed %v, want x", locals(res.Jobs))
				}
				if got := f.leased("w"); got != "[]" {
					t.Fatalf("claimed %s over the limit", got)
				}
				f.checkCCWait("k", "[j]")
				f.ack(a, store.Ack{Code: store.CodeOK})
				if got := f.leased("w"); got != "[j]" {
					t.Fatalf("after a: %s, want [j]", got)
				}
			})
		}
	}
}

// TestHandedJobListedOnce: a pinned job that its After fallback handed to
// every worker is taken from the shared list only: the entry left on its
// worker's list is stale, else that worker's claim and another's each
// set it waiting on its key.
func TestHandedJobListedOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Limits: oneAtATime})
			a := f.claimOne("w")
			f.enqueue(store.NewJob{Local: "p", Limits: oneAtATime, Sticky: store.Sticky{Worker: "w", Mode: "a", After: time.Second}})
			f.clk.Advance(2 * time.Second) // p is handed to every worker
			if got := f.leased("w2"); got != "[]" {
				t.Fatalf("w2 claimed %s over the limit", got)
			}
			if got := f.leased("w"); got != "[]" {
				t.Fatalf("w claimed %s over the limit", got)
			}
			f.checkCCWait("k", "[p]")
			f.ack(a, store.Ack{Code: store.CodeOK})
			if got := f.leased("w2"); got != "[p]" {
				t.Fatalf("after a: w2 claimed %s, want [p]", got)
			}
		})
	}
}

// TestRerouteHandedJob: a job its After fallback handed to every worker,
// rerouted to that worker again or unpinned, is listed once on the list
// it goes to: the entry it had there is taken out.
func TestRerouteHandedJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, to := range []string{"w", ""} {
			t.Run(b.name+"/to="+to, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "p", Sticky: store.Sticky{Worker: "w", Mode: "a", After: time.Second}},
					store.NewJob{Local: "x", Priority: 5})
				f.clk.Advance(2 * time.Second)
				if res := f.claim(1, "w2"); len(res.Jobs) != 1 || res.Jobs[0].Local != "x" { // p is handed on
					t.Fatalf("w2 claimed %v, want x", locals(res.Jobs))
				}
				st := store.Sticky{}
				if to != "" {
					st = store.Sticky{Worker: to, Mode: "w"}
				}
				if _, err := f.st.Reroute(f.ctx, f.ref("p"), st); err != nil {
					t.Fatal(err)
				}
				list := f.p.Available(0)
				if to != "" {
					list = f.p.Pinned(to)
				}
				if got := fmt.Sprint(f.list(list)); got != "[p]" {
					t.Fatalf("the list p went to holds %s, want [p]", got)
				}
			})
		}
	}
}
