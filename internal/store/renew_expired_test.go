package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestRenewalAfterExpiryIsLost: SPEC §7, "a worker that stalls past its
// lease (its writes are rejected)". The lease ran out 5 s ago by store
// time and no maintenance pass has reaped the job yet: a renewal reports
// the lease lost (the job still running) and does not extend it, so the
// next maintenance pass reaps the job and counts the crash. (Renewal
// checked the job's state, lease ID and fence only: the stalled worker's
// renewal revived the lease, and its writes went on being accepted.)
func TestRenewalAfterExpiryIsLost(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			j := f.claimOne("stalled")
			f.clk.Advance(35 * time.Second) // the lease was 30 s
			lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: 30 * time.Second}})
			if err != nil || len(lost) != 1 || lost[0].LeaseID != j.LeaseID || lost[0].State != "running" {
				t.Fatalf("renewal 5 s after the lease ran out: lost %+v, %v; want the lease lost, its job running", lost, err)
			}
			if got, _ := f.get("job"); !got.LeaseExpiry.Equal(j.LeaseExpiry) {
				t.Fatalf("lease expiry %v after the refused renewal, want %v, untouched", got.LeaseExpiry, j.LeaseExpiry)
			}
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 {
				t.Fatalf("reap after the refused renewal: %+v %v, want the job", reaped, err)
			}
		})
	}
}

// TestWritesPastLeaseExpiryRefused: an attempt whose lease has run out by
// store time writes nothing, even before a reaper ended it (SPEC: a worker
// that stalls past its lease has its writes rejected): its step
// checkpoint, progress report and ack are answered stale, and the job is
// left running for the reaper, which counts the crash.
func TestWritesPastLeaseExpiryRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			j := f.claimOne("stalled")
			f.clk.Advance(35 * time.Second) // the lease was 30 s: it ran out 5 s ago
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s:charge", Record: []byte("r"), Mode: store.ModeOnce}); !errors.Is(err, store.ErrStale) {
				t.Errorf("step checkpoint: %v, want ErrStale", err)
			}
			if ok, err := f.st.Progress(f.ctx, f.p, []store.ProgressReport{{Lease: lease(j), Percent: 50}}); err != nil || len(ok) != 1 || ok[0] {
				t.Errorf("progress: %v %v, want refused", ok, err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Errorf("ack: %+v, want ErrStale", r)
			}
			if got, _ := f.get("job"); got.State != "running" || got.CrashAttempt != 0 {
				t.Fatalf("job: %s, crash %d: want it left running for the reaper", got.State, got.CrashAttempt)
			}
			if reaped, err := f.reap(10); err != nil || len(reaped) != 1 {
				t.Fatalf("reap: %+v %v", reaped, err)
			}
			if got, _ := f.get("job"); got.CrashAttempt != 1 {
				t.Errorf("after the reap: crash %d, want 1", got.CrashAttempt)
			}
		})
	}
}

// TestLapsedCheckWithTheReaperBehind: the writes' lease check reads the
// run index's lapsed head up to a bound; with more lapsed leases than
// that (no reaper has run), a stalled attempt's step commit, progress
// report and ack are still refused and a healthy one's still apply (the
// three scripts share lapsed_among).
func TestLapsedCheckWithTheReaperBehind(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 300 {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("old%03d", i)})
			}
			f.enqueue(jobs...)
			var stalled []*store.Job
			for len(stalled) < 300 {
				stalled = append(stalled, f.claim(30, "stalled").Jobs...) // miniredis's Lua packs no more at once
			}
			f.clk.Advance(35 * time.Second) // 300 leases ran out; no reaper ran
			f.enqueue(store.NewJob{Local: "fresh"})
			fresh := f.claimOne("healthy")
			if fresh.Local != "fresh" {
				t.Fatalf("claimed %s", fresh.Local)
			}
			for _, j := range []*store.Job{stalled[299], fresh} {
				_, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: j.Local + ":s"})
				if stale := j != fresh; errors.Is(err, store.ErrStale) != stale || (!stale && err != nil) {
					t.Errorf("%s's step commit: %v, want stale %v", j.Local, err, stale)
				}
				ok, err := f.st.Progress(f.ctx, f.p, []store.ProgressReport{{Lease: lease(j), Percent: 50}})
				if err != nil || ok[0] != (j == fresh) {
					t.Errorf("%s's progress: %v %v, want written %v", j.Local, ok, err, j == fresh)
				}
			}
			if r := f.ack(stalled[299], store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Errorf("a stalled attempt's ack: %+v, want ErrStale", r)
			}
			if r := f.ack(fresh, store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
				t.Errorf("a healthy attempt's ack: %+v, want completed", r)
			}
		})
	}
}

// TestHeldLeaseMissingFromRunIndex: a running job whose entry in the run
// index is gone (corrupt data) is held by its lease alike for every write
// of its attempt: a renewal says held and puts the entry back (so the
// reaper finds the job should its worker die), and progress and the ack
// apply. A renewal that said lost while the ack applied left the job
// running on no index once its worker gave up: never reaped.
func TestHeldLeaseMissingFromRunIndex(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			if err := f.rdb.ZRem(f.ctx, f.p.Running(), "job").Err(); err != nil {
				t.Fatal(err)
			}
			lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: 30 * time.Second}})
			if err != nil || len(lost) != 0 {
				t.Fatalf("renew: lost %v, %v; want held", lost, err)
			}
			if _, ok := f.score(f.p.Running(), "job"); !ok {
				t.Error("the renewal did not put the job back in the run index")
			}
			if ok, err := f.st.Progress(f.ctx, f.p, []store.ProgressReport{{Lease: lease(j), Percent: 50}}); err != nil || !ok[0] {
				t.Errorf("progress: %v %v, want written", ok, err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
				t.Errorf("ack: %+v, want completed", r)
			}
		})
	}
}
