package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
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
