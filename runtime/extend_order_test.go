package runtime_test

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

// The leases of the tests of this file.
const (
	extendLease = 30 * time.Second
	extendRenew = 9 * time.Second
)

// TestExtendLeaseAfterRenewalInFlight: a background renewal of the lease
// (its old duration) has run in Redis and its reply is still on its way
// when the handler shortens the lease with ExtendLease. Redis keeps the
// shorter lease; the worker must reckon with it too, and give the attempt
// up at its end. Before, ExtendLease went out at once, and the renewal's
// reply, read after it, set the worker's lease end from the old duration:
// the handler ran on for 18 s past the lease Redis held, while another
// worker could take the job (found by an audit).
func TestExtendLeaseAfterRenewalInFlight(t *testing.T) {
	t.Parallel()
	r, extended, rest := newShorteningRun(t)

	r.hold.armed.Store(true)
	r.clk.Advance(extendRenew) // the background renewal: run by Redis, its reply held
	testkit.Recv(t, (<-chan struct{})(r.hold.held), "the background renewal's reply to be held")
	extendAt := r.clk.Now()
	close(r.release)
	var (
		err      error
		returned bool
	)
	select {
	case err = <-extended: // sent at once (before the fix)
		returned = true
	case <-time.After(300 * time.Millisecond): // waiting for the renewal in flight
	}
	r.hold.open()
	testkit.Recv(t, (<-chan struct{})(r.hold.returned), "the background renewal to return")
	if !returned {
		err = testkit.Recv(t, extended, "ExtendLease to return")
	}
	if err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // the renewal's answer applied (before the fix, ExtendLease returned first)

	// No renewal lands any more: the attempt must be given up at the end
	// of the shorter lease, not of the longer one.
	rest.armed.Store(true)
	r.clk.Advance(extendAt.Add(shorter + time.Millisecond).Sub(r.clk.Now()))
	r.expectLost(t, "the worker reckons with the renewal's older duration")
}

// TestExtendLeaseLostReplyShortens: an ExtendLease that shortens the
// lease ran in Redis, and its reply was lost: the call fails. The worker
// cannot know whether Redis ran it, so it reckons with the shorter lease,
// and gives the attempt up at its end when no later renewal lands. Before,
// it kept the longer end it had, 18 s past the lease Redis held.
func TestExtendLeaseLostReplyShortens(t *testing.T) {
	t.Parallel()
	r, extended, rest := newShorteningRun(t)

	r.hold.lose.Store(true)
	r.hold.armed.Store(true)
	extendAt := r.clk.Now()
	close(r.release)
	testkit.Recv(t, (<-chan struct{})(r.hold.held), "ExtendLease to run in Redis")
	rest.armed.Store(true) // no renewal lands after it
	r.hold.open()
	if err := testkit.Recv(t, extended, "ExtendLease to return"); err == nil {
		t.Fatal("ExtendLease whose reply was lost returned nil")
	}
	if left := r.e.Job(r.id).LeaseExpiry.Sub(extendAt); left != shorter {
		t.Fatalf("Redis holds the lease for %s from the call, want %s: the test's call did not run", left, shorter)
	}
	r.clk.Advance(shorter + time.Millisecond)
	r.expectLost(t, "Redis ran it")
}

// TestExtendLeaseSlowReplyKeepsRenewals: an ExtendLease that keeps the
// lease's duration (ExtendLease(ctx, 0), what an isolated handler's
// Confirm sends) has run in Redis and its reply is slow. The renewal loop
// goes on renewing the lease beside it, and the worker does not give the
// attempt up. A first fix of the test above stopped every background
// renewal while any ExtendLease was in flight, and the attempt was lost
// at its lease's end (found by the day's second review).
func TestExtendLeaseSlowReplyKeepsRenewals(t *testing.T) {
	t.Parallel()
	r := newLeaseRun(t, func(ctx context.Context) { _ = runtime.ExtendLease(ctx, 0) })
	r.clk.waitTimers(t, extendRenew, 1)
	r.hold.armed.Store(true)
	close(r.release)
	testkit.Recv(t, (<-chan struct{})(r.hold.held), "ExtendLease's reply to be held")
	for i := 1; i <= 2; i++ {
		r.clk.Advance(extendRenew)
		r.clk.waitTimers(t, extendRenew, 1+i)
		if left := r.e.Job(r.id).LeaseExpiry.Sub(r.clk.Now()); left < extendLease-time.Second {
			t.Fatalf("%s on: the store's lease ends %s from now, want about %s: the renewal loop skipped the attempt", time.Duration(i)*extendRenew, left, extendLease)
		}
	}
	r.clk.Advance(extendLease - 2*extendRenew + time.Second) // past the lease the worker had when ExtendLease went out
	select {
	case cause := <-r.lost:
		t.Fatalf("the attempt was given up (%v) while only ExtendLease's reply was slow", cause)
	case <-time.After(time.Second):
	}
}

// TestExtendLeaseWaitsItsTurnWithinItsContext: an ExtendLease of the
// attempt is in flight, its reply slow; a second one, with a 200 ms
// deadline, waits its turn no longer than its context allows. A first fix
// of the tests above made it wait on a mutex, until the first returned
// (found by the day's second review).
func TestExtendLeaseWaitsItsTurnWithinItsContext(t *testing.T) {
	t.Parallel()
	second := testkit.Chan[error]()
	var r *leaseRun
	r = newLeaseRun(t, func(ctx context.Context) {
		go func() { _ = runtime.ExtendLease(ctx, 0) }()
		<-r.hold.held
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		second <- runtime.ExtendLease(c, 0)
	})
	r.hold.armed.Store(true)
	close(r.release)
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the second ExtendLease, its turn not come by its deadline: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the second ExtendLease, with a 200 ms deadline, still waits after 3 s")
	}
}

// TestExtendLeaseKeepReadInItsTurn: ExtendLease(ctx, 1m) is in flight, its
// reply slow; ExtendLease(ctx, 0), which keeps the current duration,
// waits its turn and then keeps the minute. Before, it read the duration
// before waiting (30 s) and shortened the lease back to it (found by the
// day's third review).
func TestExtendLeaseKeepReadInItsTurn(t *testing.T) {
	t.Parallel()
	done := testkit.Chan[error]()
	keepWaits := make(chan struct{})
	var r *leaseRun
	r = newLeaseRun(t, func(ctx context.Context) {
		go func() { done <- runtime.ExtendLease(ctx, time.Minute) }()
		<-r.hold.held
		go func() { done <- runtime.ExtendLease(ctx, 0) }()
		<-keepWaits
		r.hold.open()
	})
	r.hold.armed.Store(true)
	close(r.release)
	r.e.Sig.Extending.WaitFor(t, func(j testsignal.Job) bool { return j.JobID == r.id }) // the keep call waits its turn
	close(keepWaits)
	for range 2 {
		if err := testkit.Recv(t, done, "ExtendLease to return"); err != nil {
			t.Fatal(err)
		}
	}
	if left := r.e.Job(r.id).LeaseExpiry.Sub(r.clk.Now()); left < 50*time.Second {
		t.Fatalf("after ExtendLease(1m) and ExtendLease(0): the lease ends %s from now, want 1m (the keep call shortened it)", left)
	}
}

// TestExtendLeaseBesideSlowRenewal: a background renewal's reply is slow;
// ExtendLease(ctx, 0) goes out beside it and succeeds (Redis holds the
// lease 30 s from the renewal). The worker must reckon with the end the
// renewal would give, not the one it had before both calls: it gave the
// attempt up at that one, 8 s before the lease Redis held ended (found by
// the day's third review).
func TestExtendLeaseBesideSlowRenewal(t *testing.T) {
	t.Parallel()
	extended := testkit.Chan[error]()
	r := newLeaseRun(t, func(ctx context.Context) { extended <- runtime.ExtendLease(ctx, 0) })
	start := r.clk.Now()
	r.hold.armed.Store(true)
	r.clk.Advance(extendRenew) // the background renewal: run, its reply held
	testkit.Recv(t, (<-chan struct{})(r.hold.held), "the renewal's reply to be held")
	close(r.release)
	if err := testkit.Recv(t, extended, "ExtendLease to return"); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	held := r.e.Job(r.id).LeaseExpiry
	r.clk.Advance(start.Add(extendLease + time.Second).Sub(r.clk.Now())) // past the end before both calls, 8 s before Redis's
	select {
	case cause := <-r.lost:
		t.Fatalf("given up at start+31s (%v), though ExtendLease returned nil and Redis holds the lease until start+%s", cause, held.Sub(start))
	case <-time.After(time.Second):
	}
}

// leaseRun is a worker on a fake clock (extendLease, renewed every
// extendRenew) running one job, whose handler, once release is closed,
// runs body, then waits for its context's end (lost gets its cause). hold
// holds the first renewal reply it is armed for.
type leaseRun struct {
	e       *env
	clk     *testClock
	hold    *holdFirstReply
	id      string
	lost    chan error
	release chan struct{}
}

func newLeaseRun(t *testing.T, body func(ctx context.Context)) *leaseRun {
	t.Helper()
	clk := newTestClock(fakeStart())
	r := &leaseRun{e: newEnv(t, clk), clk: clk, lost: testkit.Chan[error](), release: make(chan struct{}),
		hold: &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}}
	r.e.RDB.AddHook(r.hold)
	started := testkit.Chan[string]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			r.lost <- context.Cause(ctx)
		}()
		<-r.release
		body(ctx)
		<-ctx.Done()
		return nil
	}))
	w := r.e.startWorker(reg, runtime.Options{Clock: clk, Lease: extendLease, RenewInterval: extendRenew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(r.hold.open) // before the worker stops: it waits for the renewals in flight
	r.e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	r.id = r.e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	return r
}

// shorter is the lease an ExtendLease of newShorteningRun's asks for.
const shorter = 12 * time.Second

// newShorteningRun is a leaseRun whose handler calls ExtendLease(shorter)
// once released (extended gets its error), with a gate for the renewals
// after the one the run's hold holds.
func newShorteningRun(t *testing.T) (r *leaseRun, extended chan error, rest *callGate) {
	t.Helper()
	extended = testkit.Chan[error]()
	r = newLeaseRun(t, func(ctx context.Context) {
		extended <- runtime.ExtendLease(context.WithoutCancel(ctx), shorter)
	})
	return r, extended, r.gateRenewals(t)
}

// expectLost checks that the attempt is given up, lost, within 5 s of
// the clock having passed the end of its shorter lease; why says what
// the worker missed if not.
func (r *leaseRun) expectLost(t *testing.T, why string) {
	t.Helper()
	select {
	case cause := <-r.lost:
		if !errors.Is(cause, runtime.ErrLeaseLost) {
			t.Fatalf("handler cancelled with %v, want ErrLeaseLost", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the attempt still runs %s after ExtendLease(%s): %s", shorter, shorter, why)
	}
}

// gateRenewals adds a gate that, once armed, holds every renewal call
// that the first-reply hold lets through, until the test ends.
func (r *leaseRun) gateRenewals(t *testing.T) *callGate {
	g := newCallGate(isScript(lua.Renew, ""))
	r.e.RDB.AddHook(g)
	t.Cleanup(g.open)
	return g
}

// holdFirstReply is a go-redis hook that lets the first call matching
// match run, then holds its reply until release is closed (held is closed
// once it holds it, returned once the call returns); every other call
// goes through. With lose set, that call then fails as if its reply were
// lost, although Redis ran it.
type holdFirstReply struct {
	match                   func(cmd redis.Cmder) bool
	armed, taken, lose      atomic.Bool
	held, release, returned chan struct{}
	releaseOnce             atomic.Bool
}

func (h *holdFirstReply) open() {
	if h.releaseOnce.CompareAndSwap(false, true) {
		close(h.release)
	}
}

func (h *holdFirstReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdFirstReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.armed.Load() || !h.match(cmd) || !h.taken.CompareAndSwap(false, true) {
			return next(ctx, cmd)
		}
		err := next(ctx, cmd)
		close(h.held)
		<-h.release
		defer close(h.returned)
		if h.lose.Load() {
			err = errors.New("i/o timeout (injected after Redis ran the call)")
			cmd.SetErr(err)
		}
		return err
	}
}

func (h *holdFirstReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
