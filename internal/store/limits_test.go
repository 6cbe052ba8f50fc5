package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

func locals(jobs []*store.Job) map[string]bool {
	m := map[string]bool{}
	for _, j := range jobs {
		m[j.Local] = true
	}
	return m
}

// TestConcurrencyCeiling: jobs over their key's limit wait, without
// holding up other jobs, and the longest waiter goes when a slot frees.
func TestConcurrencyCeiling(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := func(key string, n int) store.Limits { return store.Limits{ConcurrencyKey: key, ConcurrencyLimit: n} }
			var jobs []store.NewJob
			for i := range 6 {
				jobs = append(jobs, store.NewJob{Local: "a" + string(rune('0'+i)), Limits: lim("tenant-a", 2)})
			}
			jobs = append(jobs, store.NewJob{Local: "b0", Limits: lim("tenant-b", 1)}, store.NewJob{Local: "b1", Limits: lim("tenant-b", 1)},
				store.NewJob{Local: "free"})
			f.enqueue(jobs...)
			first := f.claim(20, "w")
			got := locals(first.Jobs)
			if len(got) != 4 || !got["a0"] || !got["a1"] || !got["b0"] || !got["free"] {
				t.Fatalf("first claim %v, want a0 a1 b0 free", got)
			}
			if again := f.claim(20, "w"); len(again.Jobs) != 0 {
				t.Fatalf("claimed over the limits: %v", locals(again.Jobs))
			}
			for _, j := range first.Jobs {
				if j.Local == "a0" {
					f.ack(j, store.Ack{Code: store.CodeOK})
				}
			}
			next := f.claim(20, "w")
			if got := locals(next.Jobs); len(got) != 1 || !got["a2"] {
				t.Fatalf("after a0 finished: %v, want a2 (the longest waiter)", got)
			}
			if n, _ := f.rdb.HGet(f.ctx, f.p.Concurrency(), "tenant-a").Int(); n != 2 {
				t.Fatalf("running count of tenant-a %d, want 2", n)
			}
			// a crash (lease expiry) frees the slot too
			f.clk.Advance(time.Minute)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			if n, _ := f.rdb.HLen(f.ctx, f.p.Concurrency()).Result(); n != 0 {
				t.Fatalf("counters left after every job stopped running: %d", n)
			}
		})
	}
}

// TestRateClass: a rate class lets jobs start at its rate in store time;
// the rest wait on the class, and claims report when a token frees.
func TestRateClass(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			rl := store.Limits{RateClass: "smtp", RateJobs: 2, RatePer: time.Second, RateBurst: 2}
			var jobs []store.NewJob
			for i := range 7 {
				jobs = append(jobs, store.NewJob{Local: "r" + string(rune('0'+i)), Limits: rl})
			}
			f.enqueue(append(jobs, store.NewJob{Local: "free"})...)
			first := f.claim(20, "w")
			if got := locals(first.Jobs); len(got) != 3 || !got["r0"] || !got["r1"] || !got["free"] {
				t.Fatalf("first claim %v, want r0 r1 free", got)
			}
			if !first.Dry || !dueAt(first, f.clk.Now()).Equal(epoch.Add(500*time.Millisecond)) {
				t.Fatalf("dry %v next due %v, want a token at +500ms", first.Dry, first.NextDue)
			}
			f.clk.Advance(500 * time.Millisecond)
			if got := locals(f.claim(20, "w").Jobs); len(got) != 1 || !got["r2"] {
				t.Fatalf("after 500ms: %v, want r2", got)
			}
			f.clk.Advance(time.Second)
			if got := locals(f.claim(20, "w").Jobs); len(got) != 2 || !got["r3"] || !got["r4"] {
				t.Fatalf("after 1.5s: %v, want r3 r4", got)
			}
			f.clk.Advance(10 * time.Second) // the bucket holds at most its burst
			if got := locals(f.claim(20, "w").Jobs); len(got) != 2 || !got["r5"] || !got["r6"] {
				t.Fatalf("after a long pause: %v, want r5 r6 (burst 2)", got)
			}
		})
	}
}

// TestUniqueJobs: a unique key held while the job is active or for a TTL;
// duplicates return the holder, and can replace or debounce it.
func TestUniqueJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			enq := func(j store.NewJob) store.EnqueueResult {
				t.Helper()
				if j.Kind == "" {
					j.Kind, j.MaxAttempts = "k", 3
				}
				if j.Payload == nil {
					j.Payload = []byte(j.Local)
				}
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{j})
				if err != nil {
					t.Fatal(err)
				}
				return res[0]
			}
			active := store.Unique{Key: "report:42"}
			if r := enq(store.NewJob{Local: "u1", Unique: active}); r.Status != store.Added {
				t.Fatalf("first: %+v", r)
			}
			if r := enq(store.NewJob{Local: "u2", Unique: active}); r.Status != store.Held || r.Existing != "u1" {
				t.Fatalf("duplicate while active: %+v", r)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			if r := enq(store.NewJob{Local: "u3", Unique: active}); r.Status != store.Added {
				t.Fatalf("after the holder finished: %+v", r)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})

			ttl := store.Unique{Key: "digest", TTL: time.Hour}
			enq(store.NewJob{Local: "t1", Unique: ttl})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			if r := enq(store.NewJob{Local: "t2", Unique: ttl}); r.Status != store.Held || r.Existing != "t1" {
				t.Fatalf("duplicate within the TTL after completion: %+v", r)
			}

			enq(store.NewJob{Local: "p1", Payload: []byte("old"), Unique: store.Unique{Key: "sync"}})
			if r := enq(store.NewJob{Local: "p2", Payload: []byte("new"), Unique: store.Unique{Key: "sync", OnDuplicate: "replace"}}); r.Status != store.Held {
				t.Fatalf("replace: %+v", r)
			}
			if got, _ := f.get("p1"); string(got.Payload) != "new" {
				t.Fatalf("replaced payload %q", got.Payload)
			}

			deb := store.Unique{Key: "search-index", OnDuplicate: "debounce"}
			enq(store.NewJob{Local: "d1", Delay: time.Minute, Unique: deb})
			enq(store.NewJob{Local: "d2", Delay: 5 * time.Minute, Unique: deb})
			if got, _ := f.get("d1"); got.State != "scheduled" || !got.RunAt.Equal(epoch.Add(5*time.Minute)) {
				t.Fatalf("debounced job: %s at %v", got.State, got.RunAt)
			}
		})
	}
}

// TestLimitPerPartition documents how a limit is shared on Redis Cluster:
// counters live in each partition's slot, so every partition enforces the
// limit on its own: with two partitions of a queue, a key limited to 2 runs
// at most 2 per partition (4 in all). Split a fleet-wide limit over the
// partitions, or keep strictly limited work on a one-partition queue.
func TestLimitPerPartition(t *testing.T) {
	t.Parallel()
	b := backends(t)[2] // the cluster
	f := newFixture(t, b)
	p0, p1 := f.st.Partition("q", 0), f.st.Partition("q", 1)
	if keys.Slot(p0.Tag()) == keys.Slot(p1.Tag()) {
		t.Fatal("the partitions share a slot; pick other names")
	}
	running := 0
	for _, p := range []keys.Partition{p0, p1} {
		f.p = p
		var jobs []store.NewJob
		for i := range 5 {
			jobs = append(jobs, store.NewJob{Local: "j" + string(rune('0'+i)), Limits: store.Limits{ConcurrencyKey: "tenant", ConcurrencyLimit: 2}})
		}
		f.enqueue(jobs...)
		got := f.claim(10, "w")
		if len(got.Jobs) != 2 {
			t.Fatalf("partition %d claimed %d, want its own limit of 2", p.Index, len(got.Jobs))
		}
		running += len(got.Jobs)
	}
	if running != 4 {
		t.Fatalf("%d running across partitions, want 4", running)
	}
}

// TestConcurrencyWaitersAllWake: several slots freed in one ack call let
// as many waiters go, and every waiter runs in the end.
func TestConcurrencyWaitersAllWake(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 8 {
				jobs = append(jobs, store.NewJob{Local: "j" + string(rune('0'+i)), Limits: store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 3}})
			}
			f.enqueue(jobs...)
			done := 0
			for round := 0; round < 10 && done < 8; round++ {
				res := f.claim(10, "w")
				if len(res.Jobs) > 3 {
					t.Fatalf("%d running at once, limit 3", len(res.Jobs))
				}
				acks := make([]store.Ack, len(res.Jobs))
				for i, j := range res.Jobs {
					acks[i] = store.Ack{Lease: lease(j), Code: store.CodeOK}
				}
				if _, _, err := f.st.Ack(f.ctx, f.p, acks); err != nil { // all slots freed in one call
					t.Fatal(err)
				}
				done += len(res.Jobs)
			}
			if done != 8 {
				t.Fatalf("%d of 8 jobs ran; waiters were lost", done)
			}
		})
	}
}

// TestConcurrencyWokenWaiterLeaves: a waiter woken by a freed slot that
// leaves before any claim leases it (cancelled, deleted, past its
// deadline) passes the slot on to the next waiter, instead of leaving the
// key with a free slot and waiters that nothing will ever wake.
func TestConcurrencyWokenWaiterLeaves(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, leave := range []string{"cancel", "delete", "deadline"} {
				f := newFixture(t, b)
				lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
				f.enqueue(store.NewJob{Local: "a", Limits: lim})
				f.enqueue(store.NewJob{Local: "b", Limits: lim, Deadline: epoch.Add(time.Second)},
					store.NewJob{Local: "c", Limits: lim})
				a := f.claimOne("w")
				if got := f.claim(10, "w"); len(got.Jobs) != 0 { // b and c wait on k
					t.Fatalf("%s: claimed over the limit: %v", leave, locals(got.Jobs))
				}
				f.ack(a, store.Ack{Code: store.CodeOK}) // b is woken
				switch leave {
				case "cancel":
					if _, err := f.st.Cancel(f.ctx, f.ref("b"), retainCancelled); err != nil {
						t.Fatal(err)
					}
				case "delete":
					if _, err := f.st.Delete(f.ctx, f.ref("b")); err != nil {
						t.Fatal(err)
					}
				case "deadline":
					f.clk.Advance(2 * time.Second)
					// the claim that archives b lets c go, for the next claim
					res := f.claim(10, "w")
					if len(res.Parked) != 1 || res.Parked[0].Local != "b" || !res.Dry || !res.Scheduled || res.NextDue != 0 {
						t.Fatalf("deadline: claim parked %v, next due %v, want b parked and a claim again now", res.Parked, res.NextDue)
					}
				}
				got := f.claim(10, "w")
				if l := locals(got.Jobs); len(l) != 1 || !l["c"] {
					t.Fatalf("%s: claimed %v after the woken waiter b left, want c", leave, l)
				}
			}
		})
	}
}
