package store_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

func (f *fixture) ref(local string) keys.Ref { return keys.Ref{Partition: f.p, Local: local} }

func (f *fixture) stats() map[string]int64 {
	f.t.Helper()
	c, err := f.st.StateCounts(f.ctx, []keys.Partition{f.p})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for s, n := range c[0] {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

// archive runs jobs (max attempts 1) into archived with one failed attempt.
func (f *fixture) archive(locals ...string) {
	f.t.Helper()
	for _, l := range locals {
		f.archiveJob(store.NewJob{Local: l})
	}
}

// archiveJob enqueues j with max attempts 1 and runs it into archived
// with one failed attempt.
func (f *fixture) archiveJob(j store.NewJob) {
	f.t.Helper()
	j.MaxAttempts = 1
	f.enqueue(j)
	if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"}); r.State != "archived" {
		f.t.Fatalf("%s: %+v, want archived", j.Local, r)
	}
}

// TestCancel: every unfinished state cancels (reason operator); a running
// job's fence moves, so its holder's renewal reports the lease lost with
// state cancelled and its writes are stale; its concurrency slot frees.
func TestCancel(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "run", Limits: lim}, store.NewJob{Local: "wait", Limits: lim},
				store.NewJob{Local: "later", Delay: time.Hour})
			j := f.claimOne("w") // run; wait moves to the key's wait list
			if res := f.claim(1, "w2"); len(res.Jobs) != 0 {
				t.Fatalf("claimed %d jobs past the concurrency limit", len(res.Jobs))
			}
			if prev, err := f.st.Cancel(f.ctx, f.ref("run"), retainCancelled); err != nil || prev != "running" {
				t.Fatalf("cancel running: %q, %v", prev, err)
			}
			got, _ := f.get("run")
			if got.State != "cancelled" || got.Reason != "operator" || got.Fence != j.Fence+1 {
				t.Fatalf("cancelled job: state %s reason %s fence %d", got.State, got.Reason, got.Fence)
			}
			lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: time.Minute}})
			if err != nil || len(lost) != 1 || lost[0].State != "cancelled" {
				t.Fatalf("renew after cancel: %+v, %v", lost, err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Fatalf("ack after cancel: %+v, want stale", r)
			}
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("x"), Mode: store.ModeOnce, Commit: "c"}); !errors.Is(err, store.ErrStale) {
				t.Fatalf("checkpoint after cancel: %v, want stale", err)
			}
			if w := f.claimOne("w2"); w.Local != "wait" { // the slot was freed
				t.Fatalf("claimed %s, want wait", w.Local)
			}
			if prev, err := f.st.Cancel(f.ctx, f.ref("later"), retainCancelled); err != nil || prev != "scheduled" {
				t.Fatalf("cancel scheduled: %q, %v", prev, err)
			}
			if _, ok := f.due("later"); ok {
				t.Fatal("cancelled job still in sched")
			}
			var se *sluicetype.StateError
			if _, err := f.st.Cancel(f.ctx, f.ref("run"), retainCancelled); !errors.As(err, &se) || se.State != "cancelled" || !errors.Is(err, store.ErrWrongState) {
				t.Fatalf("cancel a cancelled job: %v", err)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("nope"), retainCancelled); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("cancel unknown: %v", err)
			}
			if d := cmp.Diff(map[string]int64{"cancelled": 2, "running": 1}, f.stats()); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
		})
	}
}

// TestCancelAvailable: an available job's list entry goes stale.
func TestCancelAvailable(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			if _, err := f.st.Cancel(f.ctx, f.ref("a"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			res := f.claim(5, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "b" {
				t.Fatalf("claimed %v, want only b", locals(res.Jobs))
			}
		})
	}
}

// TestListedTwiceClaimedOnce: a job cancelled while available leaves its
// entry in the ready list; redriven, it is listed again. Both entries come
// in one claim's pop, which must lease the job once.
func TestListedTwiceClaimedOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			if _, err := f.st.Cancel(f.ctx, f.ref("a"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a"})
			if err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", err, errs)
			}
			res := f.claim(5, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "a" {
				t.Fatalf("claimed %d jobs %v, want a once", len(res.Jobs), locals(res.Jobs))
			}
			if got, want := f.stats(), map[string]int64{"running": 1}; !maps.Equal(got, want) {
				t.Errorf("state counts %v, want %v", got, want)
			}
			if got, _ := f.get("a"); got.LeaseID != res.Jobs[0].LeaseID || got.Fence != res.Jobs[0].Fence {
				t.Errorf("job holds lease %s fence %d, the claim returned %s fence %d",
					got.LeaseID, got.Fence, res.Jobs[0].LeaseID, res.Jobs[0].Fence)
			}
		})
	}
}

// TestDelete: a job goes with all its keys; a running one is refused.
func TestDelete(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archive("dead")
			f.enqueue(store.NewJob{Local: "run"}, store.NewJob{Local: "avail"})
			f.claimOne("w")
			if _, err := f.st.Delete(f.ctx, f.ref("run")); !errors.Is(err, store.ErrWrongState) {
				t.Fatalf("delete running: %v", err)
			}
			for _, l := range []string{"dead", "avail"} {
				if _, err := f.st.Delete(f.ctx, f.ref(l)); err != nil {
					t.Fatalf("delete %s: %v", l, err)
				}
			}
			if n := exists(t, f, f.p.Job("dead"), f.p.Errors("dead"), f.p.Job("avail")); n != 0 {
				t.Fatalf("%d keys left", n)
			}
			if _, ok := f.score(f.p.Terminal("archived"), "dead"); ok {
				t.Fatal("deleted job still in the archived set")
			}
			if _, err := f.st.Delete(f.ctx, f.ref("dead")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("delete twice: %v", err)
			}
			if res := f.claim(5, "w"); len(res.Jobs) != 0 {
				t.Fatalf("claimed deleted job %v", locals(res.Jobs))
			}
			if d := cmp.Diff(map[string]int64{"running": 1}, f.stats()); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
		})
	}
}

// TestPause: a paused partition claims nothing and goes idle; resuming
// publishes a wake-up and claims work again.
func TestPause(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			if was, err := f.st.SetPaused(f.ctx, f.p, true); err != nil || was {
				t.Fatalf("pause: %v %v", was, err)
			}
			res := f.claim(1, "w")
			if len(res.Jobs) != 0 || !res.Dry {
				t.Fatalf("paused claim: %+v", res)
			}
			ps := f.rdb.Subscribe(f.ctx, keys.WakeChannel(f.p.NS, f.p.Queue))
			defer ps.Close()
			if _, err := ps.Receive(f.ctx); err != nil {
				t.Fatal(err)
			}
			if was, err := f.st.SetPaused(f.ctx, f.p, false); err != nil || !was {
				t.Fatalf("resume: %v %v", was, err)
			}
			if m, err := ps.ReceiveMessage(f.ctx); err != nil || m.Payload != "0" {
				t.Fatalf("wake-up: %v %v", m, err)
			}
			f.claimOne("w")
		})
	}
}

// TestRedriveIDs: archived and cancelled jobs redrive, quarantined ones
// release; counters and history stay; other states are refused.
func TestRedriveIDs(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.archive("dead")
			f.enqueue(store.NewJob{Local: "quar"})
			for range 3 {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "p"})
				f.clk.Advance(time.Minute) // past the crash delay
			}
			f.enqueue(store.NewJob{Local: "avail"})
			if j, _ := f.get("quar"); j.State != "quarantined" {
				t.Fatalf("quar is %s", j.State)
			}
			errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"dead", "quar", "nope", "avail"})
			if err != nil {
				t.Fatal(err)
			}
			if errs[0] != nil || !errors.Is(errs[1], store.ErrWrongState) || !errors.Is(errs[2], store.ErrNotFound) || !errors.Is(errs[3], store.ErrWrongState) {
				t.Fatalf("redrive errors: %v", errs)
			}
			j, recs := f.get("dead")
			if j.State != "available" || j.Attempt != 1 || j.Redrives != 1 || j.RedrivenFrom != "archived:attempts_exhausted" ||
				j.Reason != "" || !j.Finished.IsZero() || len(recs) != 1 {
				t.Fatalf("redriven job: %+v (%d errors)", j, len(recs))
			}
			errs, err = f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"quar"})
			if err != nil || errs[0] != nil {
				t.Fatalf("release: %v %v", errs, err)
			}
			if j, _ := f.get("quar"); j.State != "available" || j.CrashAttempt != 0 || j.Redrives != 1 {
				t.Fatalf("released job: %+v", j)
			}
			if d := cmp.Diff([]string{"avail", "dead", "quar"}, f.availableOrder(0)); d != "" {
				t.Fatalf("available (-want +got):\n%s", d)
			}
			if d := cmp.Diff(map[string]int64{"available": 3}, f.stats()); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
		})
	}
}

// TestRedriveRetakesUniqueKey: a redriven job holds its unique key again
// while it is active, so a duplicate enqueued meanwhile is refused; when
// another live job took the key while it was archived, that job keeps it.
func TestRedriveRetakesUniqueKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "report"}
			f.enqueue(store.NewJob{Local: "a", MaxAttempts: 1, Unique: uq})
			if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"}); r.State != "archived" {
				t.Fatalf("ack: %+v", r)
			}
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a"}); err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", errs, err)
			}
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "b", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Held || res[0].Existing != "a" {
				t.Fatalf("a duplicate after the redrive: %+v %v, want held by a", res, err)
			}

			// archived again, its key is taken by c; a second redrive leaves c the key
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			f.enqueue(store.NewJob{Local: "c", Unique: uq})
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a"}); err != nil || errs[0] != nil {
				t.Fatalf("second redrive: %v %v", errs, err)
			}
			if holder, _ := f.rdb.Get(f.ctx, f.p.Unique("report")).Result(); holder != "c" {
				t.Fatalf("unique key held by %q, want c", holder)
			}
		})
	}
}
