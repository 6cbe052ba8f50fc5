package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sluicehq/sluice/internal/store"
)

// TestFencing: A's lease expires, B claims with fence+1; A's renew and ack
// are rejected and the job is exactly as B left it.
func TestFencing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			a := f.claimOne("worker-a")
			if a.Fence != 1 || a.LeaseID == "" || a.Worker != "worker-a" {
				t.Fatalf("claim A: fence %d lease %q worker %q", a.Fence, a.LeaseID, a.Worker)
			}
			f.clk.Advance(31 * time.Second)
			reaped, err := f.reap(10)
			if err != nil || len(reaped) != 1 || reaped[0].Holder != "worker-a" || reaped[0].State != "retryable" {
				t.Fatalf("reap = %+v, %v", reaped, err)
			}
			f.clk.Advance(time.Second) // the first crash delay
			b := f.claimOne("worker-b")
			if b.Fence != 2 || b.LeaseID == a.LeaseID {
				t.Fatalf("claim B: fence %d lease %q (A had %q)", b.Fence, b.LeaseID, a.LeaseID)
			}
			lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(a), Duration: time.Minute}})
			if err != nil || len(lost) != 1 || lost[0].LeaseID != a.LeaseID || lost[0].State != "running" {
				t.Fatalf("renew A = %+v, %v; want A's lease reported lost", lost, err)
			}
			for _, code := range []store.Code{store.CodeOK, store.CodeRetry, store.CodeCrash, store.CodeExpire, store.CodeSnooze, store.CodeRelease} {
				if r := f.ack(a, store.Ack{Code: code, Delay: time.Second}); !errors.Is(r.Err, store.ErrStale) {
					t.Fatalf("ack %s by A = %+v, want ErrStale", code, r)
				}
			}
			got, _ := f.get("job")
			if got.State != "running" || got.Fence != 2 || got.LeaseID != b.LeaseID || got.Worker != "worker-b" ||
				got.Attempt != 0 || got.CrashAttempt != 1 {
				t.Fatalf("job after A's stale writes: %+v", got)
			}
			// A stale renewal must not have moved B's lease expiry.
			s, _ := f.score(f.p.Running(), "job")
			if want := epoch.Add(32*time.Second + 30*time.Second); !time.UnixMilli(int64(s)).Equal(want) {
				t.Fatalf("lease expiry %v, want %v", time.UnixMilli(int64(s)), want)
			}
			if r := f.ack(b, store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
				t.Fatalf("ack by B = %+v", r)
			}
		})
	}
}

// TestReapProvenance: reaping records the orphan provenance, charges a
// crash, requeues behind waiting work and quarantines at the limit.
func TestReapProvenance(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "job"})
			for i := 1; i <= 3; i++ {
				f.claimOne("holder")
				if i == 1 {
					f.enqueue(store.NewJob{Local: "w1"}, store.NewJob{Local: "w2"})
				}
				expiry := f.clk.Now().Add(30 * time.Second)
				f.clk.Advance(30 * time.Second)
				reaped, err := f.reap(10)
				if err != nil || len(reaped) != 1 {
					t.Fatalf("reap %d = %+v, %v", i, reaped, err)
				}
				got, recs := f.get("job")
				if got.CrashAttempt != i || got.Attempt != 0 || got.Orphan.Holder != "holder" ||
					!got.Orphan.ExpiredAt.Equal(expiry) || got.Orphan.Count != i || recs[0].Class != "lease_expired" {
					t.Fatalf("after reap %d: %+v errors %+v", i, got, recs)
				}
				if i < 3 {
					due, _ := f.due("job")
					if delay := time.UnixMilli(int64(due)).Sub(f.clk.Now()); delay != time.Duration(1<<(i-1))*time.Second {
						t.Fatalf("crash %d: retry due in %v, want %ds", i, delay, 1<<(i-1))
					}
					f.clk.Advance(time.Minute)
				}
				if i == 1 {
					if _, err := f.promote(10); err != nil {
						t.Fatal(err)
					}
					if order := f.availableOrder(0); len(order) != 3 || order[2] != "job" {
						t.Fatalf("reaped job not behind waiting work: %v", order)
					}
					// let the waiting jobs run so the next claim takes "job"
					for _, w := range f.claim(2, "other").Jobs {
						f.ack(w, store.Ack{Code: store.CodeOK})
					}
				}
				if i < 3 && got.State != "retryable" {
					t.Fatalf("state %s after %d crashes", got.State, i)
				}
				if i == 3 && (got.State != "quarantined" || got.Reason != "crash_limit") {
					t.Fatalf("after 3 crashes: state %s reason %s", got.State, got.Reason)
				}
			}
		})
	}
}

// TestRenewExtends: a renewed lease is not reaped when the original expiry
// passes.
func TestRenewExtends(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			for range 5 {
				f.clk.Advance(20 * time.Second)
				lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(j), Duration: 30 * time.Second}})
				if err != nil || len(lost) != 0 {
					t.Fatalf("renew = %+v, %v", lost, err)
				}
				if reaped, _ := f.reap(10); len(reaped) != 0 {
					t.Fatalf("renewed job reaped: %+v", reaped)
				}
			}
		})
	}
}

// TestClaimIntoReusedStorage: a claim decoding into storage that held a
// job of an earlier claim (ClaimRequest.Into, as a worker reuses it) keeps
// nothing of that job: each field is the new job's, or zero.
func TestClaimIntoReusedStorage(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "rich", Kind: "rich", Headers: []byte("h"), Priority: 3, MaxAttempts: 7,
				Timeout: time.Minute, Deadline: epoch.Add(time.Hour)})
			into := make([]store.Job, 2)
			req := store.ClaimRequest{N: 2, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100, Into: into}
			res, err := f.st.Claim(f.ctx, f.p, req)
			if err != nil || len(res.Jobs) != 1 || res.Jobs[0] != &into[0] {
				t.Fatalf("claim = %+v, %v; want the job decoded into the storage given", res, err)
			}
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(res.Jobs[0]), Field: "s:one", Record: []byte("r"), Mode: store.ModeOnce}); err != nil {
				t.Fatal(err)
			}
			rich := *res.Jobs[0]
			if len(rich.Headers) == 0 || rich.Timeout == 0 || rich.Deadline.IsZero() {
				t.Fatalf("first job read without its fields: %+v", rich)
			}
			f.enqueue(store.NewJob{Local: "plain", Payload: []byte("p")})
			req.Nonce = "n2"
			res, err = f.st.Claim(f.ctx, f.p, req)
			if err != nil || len(res.Jobs) != 1 || res.Jobs[0] != &into[0] {
				t.Fatalf("second claim = %+v, %v", res, err)
			}
			got := *res.Jobs[0]
			want := store.Job{Local: "plain", Kind: "k", Payload: []byte("p"), State: "running", MaxAttempts: 3,
				Fence: 1, LeaseID: got.LeaseID, Worker: "w", LeaseExpiry: got.LeaseExpiry, Created: got.Created}
			if got.LeaseID == "" || got.LeaseExpiry.IsZero() || got.Created.IsZero() {
				t.Fatalf("plain job without its lease or created time: %+v", got)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("plain job decoded over the first (-want +got):\n%s", diff)
			}
		})
	}
}
