package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestGivenBackJobHasOrphanProvenance: a worker gives up an attempt by
// its own clock (its renewal's reply came late) and hands the job back as
// a crash with reason lease_expired, what the reaper does with an expired
// lease (renew.go giveBack). The job records the same orphan provenance
// as a reaped one: its holder, when its lease ended, the count, and the
// lease ID as the orphan lease. Before, the give-back recorded none, so a
// job reclaimed after its worker lost the lease said it never was (found
// by an audit).
func TestGivenBackJobHasOrphanProvenance(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = lease / 3
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	g := newLateReply()
	e.RDB.AddHook(g)
	reg, started, causes := blockUntilCancelled(t, clk)
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(g.open)
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	g.armed.Store(true)
	clk.Advance(renew)
	testkit.Recv(t, (<-chan struct{})(g.held), "the renewal's reply to be held")
	clk.Advance(lease - renew)
	c := testkit.Recv(t, causes, "the handler to be cancelled at the lease's end")
	if !errors.Is(c.cause, runtime.ErrLeaseLost) {
		t.Fatalf("cancelled with %v, want ErrLeaseLost", c.cause)
	}
	g.open()
	s, ok := e.Sig.Settled.Await(waitTimeout, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.GiveBack })
	if !ok || s.State != flow.StateRetryable {
		t.Fatalf("not given back: %+v %v", s, ok)
	}
	j := e.Job(id)
	if j.CrashAttempt != 1 || len(j.Errors) == 0 || j.Errors[0].Class != "lease_expired" {
		t.Fatalf("job: crash %d errors %+v", j.CrashAttempt, j.Errors)
	}
	if j.Orphan.Holder != w.ID() || j.Orphan.Count != 1 || j.Orphan.ExpiredAt.IsZero() {
		t.Errorf("orphan provenance after the give-back: %+v; want holder %s, count 1, an expiry (as a reap records)", j.Orphan, w.ID())
	}
}
