package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestStaleWorkerAckIsFenced: worker A's handler stalls past its lease;
// worker B (its clock past the lease) reaps the job, runs it again under a
// new fence and completes it. When A's handler finally returns, A's ack is
// rejected as stale and the job stays exactly as B left it.
func TestStaleWorkerAckIsFenced(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)

	startedA := testkit.Chan[int64]()
	releaseA := make(chan struct{})
	regA := flow.NewRegistry()
	testkit.Must(t, flow.RegisterResult(regA, func(ctx context.Context, job *flow.Job[workArgs]) (string, error) {
		startedA <- job.Fence
		<-releaseA // stalled: ignores its context
		return "from A", nil
	}))
	// A runs one job at a time, so it cannot claim the job back itself.
	a := e.startWorker(regA, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clkA, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	t.Cleanup(func() {
		select {
		case <-releaseA:
		default:
			close(releaseA)
		}
	})
	id := e.Enqueue(workArgs{N: 1})
	if f := testkit.Recv(t, startedA, "A to start the job"); f != 1 {
		t.Fatalf("A runs fence %d, want 1", f)
	}

	ranB := testkit.Chan[int64]()
	regB := flow.NewRegistry()
	testkit.Must(t, flow.RegisterResult(regB, func(ctx context.Context, job *flow.Job[workArgs]) (string, error) {
		ranB <- job.Fence
		return "from B", nil
	}))
	e.startWorker(regB, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(lease + time.Second)), Lease: lease, IdlePoll: time.Hour,
	})
	if f := testkit.Recv(t, ranB, "B to run the reaped job"); f != 2 {
		t.Errorf("B ran fence %d, want 2", f)
	}
	before := e.WaitState(id, flow.StateCompleted)
	rawBefore := e.rawJob(id)
	checkSummary(t, "after B", before, summary{State: flow.StateCompleted, CrashAttempt: 1, Fence: 2, OrphanHolder: a.ID(), OrphanCount: 1})

	close(releaseA)
	// A's ack is written or rejected; the rejection is logged before A
	// signals it.
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == a.ID() }); !errors.Is(s.Err, runtime.ErrStale) {
		t.Errorf("A settled its ack %+v, want it rejected as stale", s)
	}
	rejected := a.logs.find(func(r logRec) bool {
		err, _ := r.Attrs["err"].(error)
		return r.Attrs["job"] == id && errors.Is(err, runtime.ErrStale)
	})
	if rejected == nil {
		t.Errorf("A's rejected ack was not logged")
	} else if fmt.Sprint(rejected.Attrs["code"]) != "ok" {
		t.Errorf("rejected ack has code %v, want ok", rejected.Attrs["code"])
	}
	after := e.Job(id)
	if fmt.Sprintf("%+v", after) != fmt.Sprintf("%+v", before) {
		t.Errorf("job changed by a stale ack:\n got %+v\nwant %+v", after, before)
	}
	if raw := e.rawJob(id); fmt.Sprint(raw) != fmt.Sprint(rawBefore) {
		t.Errorf("job hash changed by a stale ack:\n got %v\nwant %v", raw, rawBefore)
	}
	var res string
	if err := after.DecodeResult(&res); err != nil || res != "from B" {
		t.Errorf("result %q (%v), want %q", res, err, "from B")
	}
	if after.Attempt != 0 {
		t.Errorf("attempt %d, want 0", after.Attempt)
	}
}

// TestRenewalOutlivesLease: a job running for several leases is kept by
// its worker's renewals and never reaped by another worker's maintenance,
// which runs after every step of the shared clock.
func TestRenewalOutlivesLease(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 7 * time.Second // A's renewal interval, and the clock's step
		maint = 5 * time.Second // B's maintenance interval
		steps = 9               // 63s: more than two leases
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)

	started := testkit.Chan[int64]()
	release := make(chan struct{})
	done := testkit.Chan[error]()
	regA := flow.NewRegistry()
	testkit.Must(t, flow.Register(regA, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.Fence
		select {
		case <-release:
		case <-ctx.Done():
		}
		done <- context.Cause(ctx)
		return nil
	}))
	a := e.startWorker(regA, runtime.Options{
		Clock: clk, Lease: lease, RenewInterval: renew, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "A to start the job")

	stolen := testkit.Chan[string]()
	regB := flow.NewRegistry()
	testkit.Must(t, flow.Register(regB, func(ctx context.Context, job *flow.Job[workArgs]) error {
		stolen <- job.ID
		return nil
	}))
	b := e.startWorker(regB, runtime.Options{Clock: clk, Lease: lease, MaintenanceInterval: maint, IdlePoll: time.Hour})

	renewed := func(n int) { // A has renewed n times and armed its next round
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == a.ID() && p.N == n })
	}
	maintained := func(n int) { // B's n-th maintenance pass is over and the next armed
		e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == b.ID() && p.N == n })
	}
	renewed(0)
	maintained(1)
	for i := 1; i <= steps; i++ {
		clk.Advance(renew)
		renewed(i)        // A renewed at this time
		maintained(i + 1) // B's maintenance ran at this time
		j := e.Job(id)
		checkSummary(t, fmt.Sprintf("step %d", i), j, summary{State: flow.StateRunning, Fence: 1, Holder: a.ID()})
		if want := clk.Now().Add(lease); !j.LeaseExpiry.Equal(want) {
			t.Fatalf("step %d: lease expires %v, want %v (renewed now)", i, j.LeaseExpiry, want)
		}
	}
	testkit.NoRecv(t, stolen, "job run by B")
	testkit.NoRecv(t, done, "A's handler cancelled")
	close(release)
	if cause := testkit.Recv(t, done, "A's handler to return"); cause != nil {
		t.Errorf("A's handler context: %v, want not cancelled", cause)
	}
	checkSummary(t, "final", e.WaitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
}

// TestLostLeaseCancelsOnlyThatAttempt: worker A runs two jobs; worker B
// takes one of them over after its (short, per-kind) lease expired. A's
// next renewal learns that lease is lost and cancels exactly that
// handler, with cause ErrLeaseLost; the other keeps running and renewing.
func TestLostLeaseCancelsOnlyThatAttempt(t *testing.T) {
	t.Parallel()
	const (
		long  = 60 * time.Second
		short = 5 * time.Second // KindLease of "slow" on A
		renew = 3 * time.Second
	)
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)

	type ev struct {
		kind  string
		cause error
	}
	started, finished := testkit.Chan[string](), testkit.Chan[ev]()
	release := make(chan struct{})
	body := func(ctx context.Context, kind string) error {
		started <- kind
		select {
		case <-release:
		case <-ctx.Done():
		}
		finished <- ev{kind, context.Cause(ctx)}
		return nil
	}
	regA := flow.NewRegistry()
	testkit.Must(t, flow.Register(regA, func(ctx context.Context, job *flow.Job[workArgs]) error { return body(ctx, "work") }))
	testkit.Must(t, flow.Register(regA, func(ctx context.Context, job *flow.Job[slowArgs]) error { return body(ctx, "slow") }))
	res, err := e.Client.EnqueueMany(context.Background(), flow.Item{Args: workArgs{N: 1}}, flow.Item{Args: slowArgs{N: 1}})
	testkit.Must(t, err)
	keep, lose := res[0].ID, res[1].ID
	// Two slots, both taken: A cannot claim the reaped job back.
	a := e.startWorker(regA, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clkA, Lease: long, KindLease: map[string]time.Duration{"slow": short}, RenewInterval: renew,
		Concurrency: 2, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	testkit.Recv(t, started, "A to start a job")
	testkit.Recv(t, started, "A to start both jobs")
	renewedA := func(n int) { // A has renewed n times and armed its next round
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == a.ID() && p.N == n })
	}
	renewedA(0)

	startedB := testkit.Chan[int64]()
	releaseB := make(chan struct{})
	regB := flow.NewRegistry()
	testkit.Must(t, flow.Register(regB, func(ctx context.Context, job *flow.Job[slowArgs]) error {
		startedB <- job.Fence
		<-releaseB
		return nil
	}))
	b := e.startWorker(regB, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(short + time.Second)), Lease: long, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	})
	t.Cleanup(func() { close(releaseB) })
	if f := testkit.Recv(t, startedB, "B to take over the short-lease job"); f != 2 {
		t.Errorf("B runs fence %d, want 2", f)
	}
	checkSummary(t, "long-lease job after B's maintenance", e.Job(keep), summary{State: flow.StateRunning, Fence: 1, Holder: a.ID()})

	clkA.Advance(renew)
	renewedA(1) // the renewal round is over
	got := testkit.Recv(t, finished, "the lost attempt to be cancelled")
	if got.kind != "slow" || !errors.Is(got.cause, runtime.ErrLeaseLost) {
		t.Errorf("cancelled %s with cause %v, want slow with ErrLeaseLost", got.kind, got.cause)
	}
	testkit.NoRecv(t, finished, "other attempt ending")
	j := e.Job(keep)
	checkSummary(t, "long-lease job after A's renewal", j, summary{State: flow.StateRunning, Fence: 1, Holder: a.ID()})
	if want := start.Add(renew + long); !j.LeaseExpiry.Equal(want) {
		t.Errorf("long-lease job expires %v, want %v (renewed)", j.LeaseExpiry, want)
	}
	checkSummary(t, "taken-over job, untouched by A", e.Job(lose), summary{
		State: flow.StateRunning, CrashAttempt: 1, Fence: 2, Holder: b.ID(), OrphanHolder: a.ID(), OrphanCount: 1,
	})

	close(release)
	if got := testkit.Recv(t, finished, "the other attempt to finish"); got.kind != "work" || got.cause != nil {
		t.Errorf("second finish: %s with cause %v, want work, not cancelled", got.kind, got.cause)
	}
	checkSummary(t, "long-lease job", e.WaitState(keep, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
}

// TestShortKindLeaseIsRenewedInTime: a kind's lease (KindLease) may be
// shorter than the renewal interval, which defaults to Lease/3 of the
// default lease. Such a job must still be renewed before its lease runs
// out (or the worker must refuse the configuration); otherwise any
// worker's maintenance reaps it and runs it a second time while the
// first attempt is still running.
func TestShortKindLeaseIsRenewedInTime(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second // RenewInterval defaults to 10s
		short = 6 * time.Second  // KindLease of "slow"
		step  = 2 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	o := runtime.Options{
		Clock: clk, Lease: lease, KindLease: map[string]time.Duration{"slow": short},
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
	}
	if _, err := runtime.NewWorker(e.RDB, flow.NewRegistry(), o); errors.Is(err, runtime.ErrInvalidOptions) {
		t.Logf("the worker refuses the configuration: %v", err)
		return
	}
	started := testkit.Chan[int64]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[slowArgs]) error {
		started <- job.Fence
		<-ctx.Done()
		return ctx.Err()
	}))
	w := e.startWorker(reg, o)
	id := e.Enqueue(slowArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	// The renewal loop sleeps short/3 between rounds (RenewInterval's
	// default); its first sleep is armed before the clock moves (the
	// Renewed signal of round 0), and after each step the round that fell
	// due has renewed once its signal comes.
	renewEvery := short / 3
	rounds := 0
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == rounds })
	// After each step the renewal that fell due must have extended the
	// lease: renewals every short/3 keep the expiry at least short-step
	// ahead.
	for elapsed := step; elapsed <= 3*short; elapsed += step {
		clk.Advance(step)
		rounds += int(step / renewEvery)
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == rounds })
		if j := e.Job(id); j.State != flow.StateRunning || j.LeaseExpiry.Before(clk.Now().Add(short-step)) {
			t.Fatalf("%s after the claim, the %s lease of the running job ran out without renewal (%s, expiry %v from now): "+
				"any worker's maintenance would reap it and run it a second time",
				elapsed, short, j.State, j.LeaseExpiry.Sub(clk.Now()))
		}
	}
}

// TestSlowAckKeepsItsLease: the handler has returned, but its ack is held
// back on its way to Redis for twice the lease. The renewal loop must keep
// renewing the lease meanwhile, or any worker's maintenance could reap the
// finished job and run it again; once the ack goes through, the job is
// complete after one run.
func TestSlowAckKeepsItsLease(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = lease / 3 // RenewInterval's default
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	gate := &ackGate{held: make(chan struct{}, 1), release: make(chan struct{})}
	e.RDB.AddHook(gate)
	var once sync.Once
	releaseAck := func() { once.Do(func() { close(gate.release) }) }

	runs := testkit.Chan[int64]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(_ context.Context, job *flow.Job[workArgs]) error {
		runs <- job.Fence
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(releaseAck) // registered after the worker's: runs before it stops
	id := e.Enqueue(workArgs{N: 1})
	fence := testkit.Recv(t, runs, "the job to run")
	testkit.Recv(t, (<-chan struct{})(gate.held), "the ack to be held back")
	renewed := func(n int) { // n rounds have renewed, the next is armed
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == n })
	}
	renewed(0)
	for rounds := 1; rounds <= 6; rounds++ { // 60 s: twice the lease
		clk.Advance(renew)
		renewed(rounds)
		if j := e.Job(id); j.State != flow.StateRunning || !j.LeaseExpiry.After(clk.Now().Add(lease-renew)) {
			t.Fatalf("%s with its ack in flight, the job is %s with its lease expiring %v from now: maintenance would reap it and run it again",
				time.Duration(rounds)*renew, j.State, j.LeaseExpiry.Sub(clk.Now()))
		}
	}
	releaseAck()
	j := e.WaitState(id, flow.StateCompleted)
	if j.Fence != fence {
		t.Errorf("completed under fence %d, want the first run's %d", j.Fence, fence)
	}
	testkit.NoRecv(t, runs, "a second run")
}

// ackGate is a go-redis hook that holds back calls of the ack script until
// release is closed, and says on held when it holds one.
type ackGate struct {
	held    chan struct{}
	release chan struct{}
}

func (g *ackGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *ackGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			select {
			case g.held <- struct{}{}:
			default:
			}
			<-g.release
		}
		return next(ctx, cmd)
	}
}

func (g *ackGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
