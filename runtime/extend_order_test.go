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
	const (
		lease   = 30 * time.Second
		renew   = 9 * time.Second
		shorter = 12 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	first := &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	e.RDB.AddHook(first)
	rest := newCallGate(isScript(lua.Renew, ""))
	e.RDB.AddHook(rest)
	started, extended, lost := testkit.Chan[string](), testkit.Chan[error](), testkit.Chan[error]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			lost <- context.Cause(ctx)
		}()
		<-go_
		extended <- runtime.ExtendLease(context.WithoutCancel(ctx), shorter)
		<-ctx.Done()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(first.open)
	t.Cleanup(rest.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")

	first.armed.Store(true)
	clk.Advance(renew) // the background renewal: run by Redis, its reply held
	testkit.Recv(t, (<-chan struct{})(first.held), "the background renewal's reply to be held")
	extendAt := clk.Now()
	close(go_)
	var (
		err      error
		returned bool
	)
	select {
	case err = <-extended: // sent at once (before the fix)
		returned = true
	case <-time.After(300 * time.Millisecond): // waiting for the renewal in flight
	}
	first.open()
	testkit.Recv(t, (<-chan struct{})(first.returned), "the background renewal to return")
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
	clk.Advance(extendAt.Add(shorter + time.Millisecond).Sub(clk.Now()))
	select {
	case cause := <-lost:
		if !errors.Is(cause, runtime.ErrLeaseLost) {
			t.Fatalf("handler cancelled with %v, want ErrLeaseLost", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the attempt still runs %s after ExtendLease(%s): the worker reckons with the renewal's older duration", shorter, shorter)
	}
}

// holdFirstReply is a go-redis hook that lets the first call matching
// match run, then holds its reply until release is closed (held is closed
// once it holds it, returned once the call returns); every other call
// goes through.
type holdFirstReply struct {
	match                   func(cmd redis.Cmder) bool
	armed, taken            atomic.Bool
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
		return err
	}
}

func (h *holdFirstReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
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
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	hold := &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	e.RDB.AddHook(hold)
	started, lost := testkit.Chan[string](), testkit.Chan[error]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			lost <- context.Cause(ctx)
		}()
		<-go_
		_ = runtime.ExtendLease(ctx, 0)
		<-ctx.Done()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(hold.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	clk.waitTimers(t, renew, 1)
	hold.armed.Store(true)
	close(go_)
	testkit.Recv(t, (<-chan struct{})(hold.held), "ExtendLease's reply to be held")
	for i := 1; i <= 2; i++ {
		clk.Advance(renew)
		clk.waitTimers(t, renew, 1+i)
		if left := e.Job(id).LeaseExpiry.Sub(clk.Now()); left < lease-time.Second {
			t.Fatalf("%s on: the store's lease ends %s from now, want about %s: the renewal loop skipped the attempt", time.Duration(i)*renew, left, lease)
		}
	}
	clk.Advance(lease - 2*renew + time.Second) // past the lease the worker had when ExtendLease went out
	select {
	case cause := <-lost:
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
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	hold := &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	e.RDB.AddHook(hold)
	t.Cleanup(hold.open)
	started, second := testkit.Chan[string](), testkit.Chan[error]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-go_
		go func() { _ = runtime.ExtendLease(ctx, 0) }()
		<-hold.held
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		second <- runtime.ExtendLease(c, 0)
		<-ctx.Done()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: 30 * time.Second, RenewInterval: 9 * time.Second,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	hold.armed.Store(true)
	close(go_)
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
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	hold := &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	e.RDB.AddHook(hold)
	started, done := testkit.Chan[string](), testkit.Chan[error]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-go_
		go func() { done <- runtime.ExtendLease(ctx, time.Minute) }()
		<-hold.held
		go func() { done <- runtime.ExtendLease(ctx, 0) }()
		time.Sleep(200 * time.Millisecond) // the keep call waits its turn
		hold.open()
		<-ctx.Done()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: 30 * time.Second, RenewInterval: 9 * time.Second,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(hold.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	hold.armed.Store(true)
	close(go_)
	for i := 0; i < 2; i++ {
		if err := testkit.Recv(t, done, "ExtendLease to return"); err != nil {
			t.Fatal(err)
		}
	}
	if left := e.Job(id).LeaseExpiry.Sub(clk.Now()); left < 50*time.Second {
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
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	hold := &holdFirstReply{match: isScript(lua.Renew, ""), held: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	e.RDB.AddHook(hold)
	started, extended, lost := testkit.Chan[string](), testkit.Chan[error](), testkit.Chan[error]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			lost <- context.Cause(ctx)
		}()
		<-go_
		extended <- runtime.ExtendLease(ctx, 0)
		<-ctx.Done()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(hold.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	start := clk.Now()
	hold.armed.Store(true)
	clk.Advance(renew) // the background renewal: run, its reply held
	testkit.Recv(t, (<-chan struct{})(hold.held), "the renewal's reply to be held")
	close(go_)
	if err := testkit.Recv(t, extended, "ExtendLease to return"); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	held := e.Job(id).LeaseExpiry
	t.Logf("Redis holds the lease until start+%s", held.Sub(start))
	clk.Advance(start.Add(lease + time.Second).Sub(clk.Now())) // past the end before both calls, 8 s before Redis's
	select {
	case cause := <-lost:
		t.Fatalf("given up at start+31s (%v), though ExtendLease returned nil and Redis holds the lease until start+%s", cause, held.Sub(start))
	case <-time.After(time.Second):
	}
}
