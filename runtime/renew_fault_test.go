package runtime_test

// Faults of lease renewal: a call that hangs (a registry node or a
// partition's node that is slow or unreachable: go-redis keeps retrying
// for tens of seconds) delays no other renewal, and an attempt whose lease
// runs out by its worker's clock is cancelled whether or not its renewal
// ever comes back.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// callGate holds back the script calls match picks while armed, until
// release is closed; then they fail with an I/O error if fail is set, or
// go through.
type callGate struct {
	match   func(cmd redis.Cmder) bool
	fail    bool
	armed   atomic.Bool
	held    chan struct{} // a call is held back
	release chan struct{}
	once    sync.Once
}

func newCallGate(match func(cmd redis.Cmder) bool) *callGate {
	return &callGate{match: match, held: make(chan struct{}, 1), release: make(chan struct{})}
}

// open lets the calls held back (and all later ones) go.
func (g *callGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *callGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *callGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g.armed.Load() && g.match(cmd) {
			select {
			case g.held <- struct{}{}:
			default:
			}
			<-g.release
			if g.fail {
				err := errors.New("i/o timeout (injected)")
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (g *callGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// isScript reports whether cmd runs sc (and names key, when key is set).
func isScript(sc *lua.Script, key string) func(redis.Cmder) bool {
	return func(cmd redis.Cmder) bool {
		args := cmd.Args()
		return len(args) > 1 && sc.Is(cmd.Name(), fmt.Sprint(args[1])) && (key == "" || strings.Contains(fmt.Sprint(args), key))
	}
}

// keepsLease advances clk by renew, n times, and checks after each that
// the job's lease, as Redis has it, was renewed in the last renew: the
// worker goes on renewing it every RenewInterval. made is how many timers
// of duration renew the worker has made so far: each renewal round that
// does not give up on a call makes one, for the next (renew is chosen so
// that nothing else waits that long).
func keepsLease(t *testing.T, e *env, clk *testClock, id string, lease, renew time.Duration, made, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		clk.Advance(renew)
		clk.waitTimers(t, renew, made+i) // the round due has renewed
		if j := e.Job(id); j.State != flow.StateRunning || j.LeaseExpiry.Before(clk.Now().Add(lease-renew)) {
			t.Fatalf("%s on: the job is %s with its lease expiring %v from now, want renewed in the last %s",
				time.Duration(i)*renew, j.State, j.LeaseExpiry.Sub(clk.Now()), renew)
		}
	}
}

// reapNow runs a maintenance pass over the default queue's partition at
// the clock's time, as any worker's would, and returns what it reaped.
func reapNow(t *testing.T, e *env, clk *testClock) []store.Reaped {
	t.Helper()
	st := store.New(e.RDB, store.Config{NS: e.NS, RetainCompleted: time.Hour, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now})
	m, err := st.Maintain(context.Background(), e.partition(), 10, 0, 0)
	testkit.Must(t, err)
	return m.Reaped
}

// blockUntilCancelled registers a handler of workArgs that reports its
// start, then waits for its context to end and reports the cause and the
// clock's time then.
func blockUntilCancelled(t *testing.T, clk runtime.Clock) (*flow.Registry, chan string, chan cancelSeen) {
	started, causes := testkit.Chan[string](), testkit.Chan[cancelSeen]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-ctx.Done()
		causes <- cancelSeen{cause: context.Cause(ctx), at: clk.Now()}
		return ctx.Err()
	}))
	return reg, started, causes
}

type cancelSeen struct {
	cause error
	at    time.Time
}

// TestSlowHeartbeatDelaysNoRenewal: the registry heartbeat hangs from the
// worker's start, for five leases, while the job's partition answers at
// once. The worker renews the lease all along: no maintenance pass reaps
// the job, and its handler is not cancelled. (The heartbeat used to be
// written on the renewal goroutine, first at its start and then after
// each round's renewals: while it hung no lease was renewed, and the
// healthy job was reaped as a crash and ran twice.)
func TestSlowHeartbeatDelaysNoRenewal(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second // a length no other timer has
		later = 3 * time.Second // when the job is claimed
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	gate := newCallGate(isScript(lua.Heartbeat, ""))
	gate.armed.Store(true)
	e.RDB.AddHook(gate)
	reg, started, causes := blockUntilCancelled(t, clk)
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(gate.open) // registered after the worker's: runs before it stops
	testkit.Recv(t, (<-chan struct{})(gate.held), "the first heartbeat to be held back")
	// the first claim has found nothing: a claim still in flight would
	// take the job at the store time it was sent, before later
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	clk.Advance(later)
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	// The first round waits for its heartbeat for the lease less the
	// renewal interval, then the next round renews at once (and sends no
	// heartbeat: one is in flight), and rounds go on every renew.
	clk.Advance(lease - renew - later)
	clk.waitTimers(t, renew, 1)
	keepsLease(t, e, clk, id, lease, renew, 1, 15)
	if reaped := reapNow(t, e, clk); len(reaped) > 0 {
		t.Fatalf("the job was reaped %+v while its worker runs it, only its registry heartbeat hanging", reaped)
	}
	testkit.NoRecv(t, causes, "the handler cancelled")
}

// TestUnreachablePartitionDelaysNoOtherRenewal: a worker runs a job in
// queue "other" whose renewals hang (its node is unreachable; on a
// cluster, another hash tag may live on another node), and then one in
// queue "default", whose node answers at once. The job in default keeps
// its lease for five leases, and the job in other is cancelled with
// ErrLeaseLost when its lease has run out by the worker's clock.
// (Partitions used to be renewed one after another: the hung call
// starved every other partition's leases.)
func TestUnreachablePartitionDelaysNoOtherRenewal(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second // a length no other timer has
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	gate := newCallGate(isScript(lua.Renew, ":other:"))
	gate.armed.Store(true)
	e.RDB.AddHook(gate)
	reg, started, causes := blockUntilCancelled(t, clk)
	e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour, Queues: map[string]int{"default": 1, "other": 1}})
	t.Cleanup(gate.open)
	clk.waitTimers(t, renew, 1)
	e.Enqueue(workArgs{N: 2}, flow.WithQueue("other"))
	testkit.Recv(t, started, "the job in other to start")
	// The fault is the renewals' alone: a claim of other still reaches
	// Redis. Its queue is paused so that the job, once its lease is lost,
	// is not claimed again: a new attempt's renewal would hang the round
	// until that lease ran out too, and the fake clock, moved by the test
	// only once a round has armed its timer, would never get there.
	testkit.Must(t, admin.New(e.Client).PauseQueue(context.Background(), "other"))
	clk.Advance(renew)
	testkit.Recv(t, (<-chan struct{})(gate.held), "the renewal of other to hang")
	clk.Advance(renew / 3)
	healthy := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job in default to start")
	// The round waits for the hung call until the lease it set out to
	// renew runs out: the next round cancels that job and renews the
	// healthy one.
	clk.Advance(lease - renew - renew/3)
	clk.waitTimers(t, renew, 2)
	c := testkit.Recv(t, causes, "the job in other to be cancelled")
	if !errors.Is(c.cause, runtime.ErrLeaseLost) || c.at.Before(start.Add(lease)) {
		t.Errorf("the job in other was cancelled at %v with %v, want ErrLeaseLost once its lease ran out (%v)",
			c.at.Sub(start), c.cause, lease)
	}
	keepsLease(t, e, clk, healthy, lease, renew, 2, 15)
	if reaped := reapNow(t, e, clk); len(reaped) > 0 {
		t.Fatalf("the job in default, whose Redis answers at once, was reaped: %+v", reaped)
	}
	testkit.NoRecv(t, causes, "the job in default cancelled")
}

// TestHungRenewalCancelsAtLeaseEnd: the renewal of the only partition
// hangs and never comes back while the test runs. The handler is
// cancelled with ErrLeaseLost when the lease runs out by the worker's
// clock, not before, without waiting for the call: another worker may
// run the job from then on.
func TestHungRenewalCancelsAtLeaseEnd(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = lease / 3
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	gate := newCallGate(isScript(lua.Renew, ""))
	e.RDB.AddHook(gate)
	reg, started, causes := blockUntilCancelled(t, clk)
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(gate.open)
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	gate.armed.Store(true)
	clk.Advance(renew)
	testkit.Recv(t, (<-chan struct{})(gate.held), "the renewal to hang")
	clk.Advance(lease - renew) // the lease claimed at start runs out now
	c := testkit.Recv(t, causes, "the handler to be cancelled at the lease's end")
	if !errors.Is(c.cause, runtime.ErrLeaseLost) || c.at.Before(start.Add(lease)) {
		t.Errorf("cancelled at %v with %v, want ErrLeaseLost at the lease's end (%v)", c.at.Sub(start), c.cause, lease)
	}
	s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.Ack }) // a maintenance pass may reap it first
	if !errors.Is(s.Err, runtime.ErrLeaseLost) {
		t.Errorf("settled %+v, want nothing acked: the lease is lost", s)
	}
}

// TestFailedRenewalPastLeaseEndCancels: a renewal hangs, and fails once
// the clock is past the lease's end. The handler is cancelled with
// ErrLeaseLost: by the worker's own reckoning the lease ran out.
// (Whether it had was judged by the time the call was sent, well within
// the lease, so the handler ran on.)
func TestFailedRenewalPastLeaseEndCancels(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = lease / 3
	)
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	gate := newCallGate(isScript(lua.Renew, ""))
	gate.fail = true
	e.RDB.AddHook(gate)
	reg, started, causes := blockUntilCancelled(t, clk)
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(gate.open)
	e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	gate.armed.Store(true)
	clk.Advance(renew) // sent 10 s after the claim; it hangs
	testkit.Recv(t, (<-chan struct{})(gate.held), "the renewal to hang")
	clk.Advance(3 * renew) // 40 s after the claim: 10 s past the lease's end
	gate.open()            // the renewal fails now
	c := testkit.Recv(t, causes, "the handler to be cancelled")
	if !errors.Is(c.cause, runtime.ErrLeaseLost) {
		t.Errorf("cancelled with %v, want ErrLeaseLost", c.cause)
	}
}
