package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sticky"
)

// deathIdentity is what runtime.Death's doc tells an OnDeath handler to be
// idempotent by: two deaths of a job with the same identity are one death
// reported twice.
type deathIdentity struct {
	ID       string
	Fence    int64
	Redrives int
	Created  time.Time
}

func identityOf(d runtime.Death) deathIdentity {
	return deathIdentity{ID: d.Job.ID, Fence: d.Job.Fence, Redrives: d.Job.Redrives, Created: d.Job.Created}
}

// TestTwoDeathsUnderOneFenceHaveDistinctIdentities: a job archived by its
// attempt (fence 1), redriven, and archived again by the claim that finds
// its deadline passed (no new fence) dies twice under one fence. OnDeath
// sees both, and the identity its handler is told to be idempotent by
// must tell them apart: else a handler written as documented drops the
// second death as a repeat of the first.
func TestTwoDeathsUnderOneFenceHaveDistinctIdentities(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	deaths := testkit.Chan[runtime.Death]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[workArgs]) error { return errors.New("boom") }))
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	id := e.Enqueue(workArgs{N: 1}, flow.WithDeadline(clk.Now().Add(time.Minute)), flow.WithMaxAttempts(1))
	first := testkit.Recv(t, deaths, "the death of the failed attempt")
	if first.Reason != "attempts_exhausted" || first.Job.Fence != 1 {
		t.Fatalf("first death: reason %q, fence %d", first.Reason, first.Job.Fence)
	}
	clk.Advance(2 * time.Minute) // past the deadline
	if _, err := admin.New(e.Client).Redrive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	second := testkit.Recv(t, deaths, "the death at the claim after the redrive")
	if second.Reason != "deadline_exceeded" || second.Job.ID != id {
		t.Fatalf("second death: reason %q, job %s", second.Reason, second.Job.ID)
	}
	if first.Job.Redrives != 0 || second.Job.Redrives != 1 {
		t.Errorf("redrives %d then %d, want 0 then 1", first.Job.Redrives, second.Job.Redrives)
	}
	if identityOf(first) == identityOf(second) {
		t.Errorf("two deaths of job %s share the identity %+v: a handler idempotent by it drops the second", id, identityOf(first))
	}
}

// TestDeathReadBackAfterRedriveIsNotTheRunningAttempts: a death the worker
// learns of without the job's data (a claim archived it: a sticky
// fallback, a deadline) is completed from Redis when it is delivered. A
// job redriven and claimed again before then is running under a new
// fence: its report must not come as a death of that running attempt
// (its fence, its redrive count), whose own death a handler idempotent by
// that identity would then drop as a repeat. The redrive dropped the
// pending report, as a sweep would find it.
func TestDeathReadBackAfterRedriveIsNotTheRunningAttempts(t *testing.T) {
	t.Parallel()
	clk, e, w, deaths, st := claimingTest(t)
	id := e.Enqueue(workArgs{N: 1}, sticky.To("worker-b", sticky.FailAfter(time.Second)))
	sentinel := e.Enqueue(workArgs{N: 2}, flow.WithDeadline(clk.Now().Add(time.Second)))
	clk.Advance(2 * time.Second)
	p := e.partition()
	res, err := st.Claim(context.Background(), p, store.ClaimRequest{N: 2, Lease: time.Minute, Worker: "test", Nonce: "n1", PromoteLimit: 10})
	testkit.Must(t, err)
	if len(res.Parked) != 2 || len(res.Jobs) != 0 {
		t.Fatalf("claim: %+v, want both jobs parked", res)
	}
	if _, err := admin.New(e.Client).Redrive(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	again, err := st.Claim(context.Background(), p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "worker-b", Nonce: "n2", PromoteLimit: 10})
	testkit.Must(t, err)
	if len(again.Jobs) != 1 || again.Jobs[0].Fence != 1 {
		t.Fatalf("claim after the redrive: %+v, want the job leased under fence 1", again)
	}
	// the job's death first, then the sentinel's: one goroutine delivers
	// them in order, so the sentinel's says the job's was handled
	slices.SortFunc(res.Parked, func(a, b store.Parked) int {
		return boolInt(keys.Ref{Partition: p, Local: a.Local}.String() != id) - boolInt(keys.Ref{Partition: p, Local: b.Local}.String() != id)
	})
	for _, pk := range res.Parked {
		w.ArchivedAtClaim(p, []store.Parked{pk})
	}
	for {
		d := testkit.Recv(t, deaths, "the deaths of the claim")
		if d.Job.ID == sentinel {
			break
		}
		if j := e.Job(id); j.State == flow.StateRunning && d.Job.Fence == j.Fence {
			t.Errorf("death %s (%s) reported with the running attempt's fence %d, redrives %d", d.State, d.Reason, d.Job.Fence, d.Job.Redrives)
		}
	}
}
