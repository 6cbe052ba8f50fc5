package runtime_test

// A lease the worker gives up by its own clock while the store still
// holds it: a renewal in flight then (a slow node, a reply that took its
// time) has renewed it at the store, for an attempt nobody runs any more.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// lateReply is a go-redis hook whose calls of the renewal script, once
// armed, run at Redis at once but answer only when release is closed;
// with resend set, the call is then run again and its second run
// answered, as go-redis does when the first reply was lost.
type lateReply struct {
	*callGate
	resend   bool
	took     atomic.Bool
	answered chan error // the held call's answer, once it is given
}

func newLateReply() *lateReply {
	return &lateReply{callGate: newCallGate(isScript(lua.Renew, "")), answered: make(chan error, 1)}
}

func (g *lateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil || !g.armed.Load() || !g.match(cmd) {
			return err
		}
		if !g.took.CompareAndSwap(false, true) {
			return err // one call is held; the later ones answer at once
		}
		g.held <- struct{}{}
		<-g.release
		if g.resend {
			err = next(ctx, cmd)
		}
		g.answered <- err
		return err
	}
}

// TestAbandonedLeaseGivenBack: a renewal runs at Redis while the lease is
// held, but its reply comes back only after the lease has run out by the
// worker's clock, and the worker has given the attempt up (its handler
// cancelled with ErrLeaseLost, nothing of it acked). The store holds the
// lease that renewal extended, for an attempt nobody runs: the worker
// hands the job back once the reply is in, charged a crash as the reaper
// would, and no more than once when the renewal was sent again (its reply
// lost) and renewed the lease a second time. (The job sat running until
// the renewed lease ran out, a third of a lease later here, and a reaper
// took it.)
func TestAbandonedLeaseGivenBack(t *testing.T) {
	t.Parallel()
	for _, resend := range []bool{false, true} {
		name := "late reply"
		if resend {
			name = "sent again"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const (
				lease = 30 * time.Second
				renew = lease / 3
			)
			start := fakeStart()
			clk := newTestClock(start)
			e := newEnv(t, clk)
			g := newLateReply()
			g.resend = resend
			e.RDB.AddHook(g)
			reg, started, causes := blockUntilCancelled(t, clk)
			w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
				MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
			t.Cleanup(g.open)
			id := e.Enqueue(workArgs{N: 1})
			testkit.Recv(t, started, "the job to start")
			e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
			g.armed.Store(true)
			clk.Advance(renew) // the renewal runs: the store's lease now ends at renew+lease
			testkit.Recv(t, (<-chan struct{})(g.held), "the renewal's reply to be held")
			clk.Advance(lease - renew) // the lease claimed at start runs out by the worker's clock
			c := testkit.Recv(t, causes, "the handler to be cancelled at the lease's end")
			if !errors.Is(c.cause, runtime.ErrLeaseLost) {
				t.Fatalf("cancelled with %v, want ErrLeaseLost", c.cause)
			}
			e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.Ack })
			g.open()
			if err := testkit.Recv(t, g.answered, "the renewal to be answered"); err != nil {
				t.Fatalf("renewal: %v", err)
			}
			s, ok := e.Sig.Settled.Await(waitTimeout, func(s testsignal.Settled) bool { return s.JobID == id })
			if !ok {
				j := e.Job(id)
				t.Fatalf("the job was not given back once its worker gave the attempt up: it is %s, its lease ends %v from now",
					j.State, j.LeaseExpiry.Sub(clk.Now()))
			}
			if s.By != testsignal.GiveBack || s.State != flow.StateRetryable {
				t.Errorf("settled %+v, want given back, retryable", s)
			}
			checkSummary(t, "given back", e.Job(id), summary{State: flow.StateRetryable, CrashAttempt: 1, Fence: 1,
				OrphanHolder: w.ID(), OrphanCount: 1})
			if s := e.Sig.Settled.Drain(); len(s) > 0 {
				t.Errorf("settled again: %+v", s)
			}
		})
	}
}

// TestAbandonedLeaseGivenBackAfterRenewals: a background renewal is in
// flight, held back before Redis runs it, and ExtendLease's call is held
// behind it, when the worker gives the attempt up at its lease's end. The
// renewals run when let go, and renew the lease at the store. The worker
// hands the job back once they have returned, so that they cannot renew
// the lease after: the job is not left running for an attempt nobody
// runs. ExtendLease, returning after the attempt was given up, answers
// ErrLeaseLost. (A give-back sent at once landed first, when the store's
// lease had run out, and wrote nothing; the renewal then renewed the
// lease.)
func TestAbandonedLeaseGivenBackAfterRenewals(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	rg := newCallGate(isScript(lua.Renew, ""))
	e.RDB.AddHook(rg)
	started, extended, lost := testkit.Chan[string](), testkit.Chan[error](), testkit.Chan[struct{}]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			lost <- struct{}{}
		}()
		<-go_
		extended <- runtime.ExtendLease(context.WithoutCancel(ctx), 0)
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(rg.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	// the worker's first maintenance pass runs at its start, unpaced; on a
	// loaded machine it ran after the clock had passed the lease's end and
	// reaped the lease before the held renewals ran. The next is an hour on.
	e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 1 })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	rg.armed.Store(true)
	clk.Advance(renew)
	testkit.Recv(t, (<-chan struct{})(rg.held), "the background renewal to be held")
	close(go_)
	testkit.Recv(t, (<-chan struct{})(rg.held), "ExtendLease's call to be held behind the renewal")
	clk.Advance(lease - renew)
	testkit.Recv(t, lost, "the handler to be cancelled at its lease's end")
	rg.open()
	if err := testkit.Recv(t, extended, "ExtendLease to return"); !errors.Is(err, runtime.ErrLeaseLost) {
		t.Fatalf("ExtendLease answered %v after the worker gave the attempt up", err)
	}
	j, err := testkit.AwaitState(e.Client, e.Sig, id, flow.StateRetryable, waitTimeout)
	if err != nil {
		t.Fatalf("the job was not given back once its worker gave the attempt up: %v (lease ends %v from now)",
			err, j.LeaseExpiry.Sub(clk.Now()))
	}
	checkSummary(t, "given back", j, summary{State: flow.StateRetryable, CrashAttempt: 1, Fence: 1,
		OrphanHolder: w.ID(), OrphanCount: 1})
}

// TestAbandonedAfterTimeoutAcksItsOwn: an attempt's timeout cancels its
// handler, which goes on; then its lease runs out by the worker's clock
// while a renewal's reply is late, and the worker gives the attempt up.
// Its handler, returning, acks the timeout (a retry): that outcome, not a
// crash, is the one the job gets, and the worker gives nothing back
// besides it. Outcomes of one attempt are never two.
func TestAbandonedAfterTimeoutAcksItsOwn(t *testing.T) {
	t.Parallel()
	const (
		lease   = 30 * time.Second
		renew   = lease / 3
		timeout = 2 * renew
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	g := newLateReply()
	e.RDB.AddHook(g)
	started, cancelled, finish := testkit.Chan[string](), testkit.Chan[error](), make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		<-finish // ignores its cancellation for a while
		return ctx.Err()
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew, Timeout: timeout,
		CancelGrace: time.Hour, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(g.open)
	t.Cleanup(func() {
		select {
		case <-finish:
		default:
			close(finish)
		}
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	g.armed.Store(true)
	clk.Advance(renew) // the renewal runs: the store's lease now ends at renew+lease
	testkit.Recv(t, (<-chan struct{})(g.held), "the renewal's reply to be held")
	clk.Advance(timeout - renew)
	if c := testkit.Recv(t, cancelled, "the handler to be cancelled by its timeout"); !errors.Is(c, runtime.ErrTimeout) {
		t.Fatalf("cancelled with %v, want ErrTimeout", c)
	}
	clk.Advance(lease - timeout) // the worker gives the attempt up
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N >= 2 })
	g.open()
	testkit.Recv(t, g.answered, "the renewal to be answered")
	close(finish)
	s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id })
	if s.By != testsignal.Ack || s.State != flow.StateRetryable {
		t.Fatalf("settled %+v, want the timeout's retry acked", s)
	}
	checkSummary(t, "after the timeout's retry", e.Job(id), summary{State: flow.StateRetryable, Attempt: 1, Fence: 1})
	if more := e.Sig.Settled.Drain(); len(more) > 0 {
		t.Errorf("settled again: %+v", more)
	}
}
