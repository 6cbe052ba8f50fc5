package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type boxedArgs struct{}

func (boxedArgs) Kind() string { return "boxed" }

// boxedHandler is a contained handler (as runtime/isolated's are): its
// crashes cannot take the process down.
type boxedHandler struct{ runtime.HandlerFunc }

func (boxedHandler) Contained() bool { return true }

// withBoxed serves kind "boxed" by its contained handler and every other
// kind by the registry.
type withBoxed struct {
	*flow.Registry
	boxed runtime.Handler
}

func (h withBoxed) Handler(kind string) (runtime.Handler, bool) {
	if kind == "boxed" {
		return h.boxed, true
	}
	return h.Registry.Handler(kind)
}

// TestSuspectBehindContainedSuspectRunsAtOnce: a claim leases one job with
// a crash on record and passes the others over. When the one it leased is
// of a contained kind, nothing in the process holds the others back: the
// worker claims again at once and runs the next suspect beside the
// contained one, on a fake clock that does not move (no poll needed).
// containedPair is a contained suspect (kind boxed, blocking until the
// test ends) enqueued before a suspect of an in-process kind (gate), both
// with a crash on record, on a fake clock.
type containedPair struct {
	e            *env
	clk          *testClock
	h            runtime.Handlers
	running      chan string // the ID of each attempt that starts
	boxed, plain string
}

func newContainedPair(t *testing.T) containedPair {
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	running := testkit.Chan[string]()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		running <- job.ID
		return nil
	}))
	h := withBoxed{Registry: reg, boxed: boxedHandler{func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
		running <- a.ID
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	}}}
	boxed := e.Enqueue(boxedArgs{})
	markSuspect(t, e, boxed)
	plain := e.Enqueue(gateArgs{N: 1})
	markSuspect(t, e, plain)
	return containedPair{e: e, clk: clk, h: h, running: running, boxed: boxed, plain: plain}
}

// markSuspect gives job id a crash on record.
func markSuspect(t *testing.T, e *env, id string) {
	ref, _ := keys.ParseRef(e.NS, id)
	testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), "c", "1").Err())
}

func TestSuspectBehindContainedSuspectRunsAtOnce(t *testing.T) {
	c := newContainedPair(t)
	e, boxed, plain := c.e, c.boxed, c.plain
	e.startWorker(c.h, runtime.Options{Clock: c.clk, CrashDelay: noCrashDelay, Concurrency: 2, IdlePoll: time.Minute})
	// the claims lease the contained suspect first, but the two attempts
	// then start side by side: either may be first to say so
	ran := map[string]bool{testkit.Recv(t, c.running, "a suspect"): true}
	select {
	case got := <-c.running:
		ran[got] = true
	case <-time.After(3 * time.Second):
		t.Fatalf("only %v ran in 3 s of a fake clock that stood still (the suspect %s behind the contained one is %s): "+
			"the worker waits for a poll, though no suspect of the process runs", ran, plain, e.Job(plain).State)
	}
	if !ran[boxed] || !ran[plain] {
		t.Fatalf("ran %v, want the contained suspect %s and the one behind it %s", ran, boxed, plain)
	}
}

// TestOwnHeldSuspectWokenOnFakeClock: one worker, two suspects. Its claim
// leases the first and passes the second over; the second does not run
// beside the first, and runs as soon as the first ends, on a fake clock
// that does not move (the wake-up of the process's suspect count, not a
// poll).
func TestOwnHeldSuspectWokenOnFakeClock(t *testing.T) {
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	running := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		running <- job.ID
		if job.Args.N == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}))
	first := e.Enqueue(gateArgs{N: 1})
	markSuspect(t, e, first)
	second := e.Enqueue(gateArgs{N: 2})
	markSuspect(t, e, second)
	dry := e.Sig.Dry.Subscribe()
	defer dry.Close()
	e.startWorker(reg, runtime.Options{Clock: clk, CrashDelay: noCrashDelay, Concurrency: 2, IdlePoll: time.Minute})
	if got := testkit.Recv(t, running, "the first suspect"); got != first {
		t.Fatalf("ran %s first, want %s", got, first)
	}
	dry.WaitFor(t, func(testsignal.Dry) bool { return true }) // the claim that leased the first passed the second over
	if st := e.Job(second).State; st != flow.StateAvailable {
		t.Fatalf("the second suspect is %s beside the first, want available", st)
	}
	close(release)
	select {
	case got := <-running:
		if got != second {
			t.Fatalf("ran %s", got)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("the first suspect ended 3 s ago (fake clock still); the second (state %s) did not run", e.Job(second).State)
	}
}

// TestResentClaimContainedSuspectRunsNextAtOnce: as
// TestSuspectBehindContainedSuspectRunsAtOnce, but the claim that leased
// the contained suspect (and passed the in-process one over) lost its
// reply and was sent again under its ID: the suspect behind runs at once
// all the same (a resent claim read no wake-up channel, and waited for
// the 100 ms poll, for ever on a fake clock that stands still).
func TestResentClaimContainedSuspectRunsNextAtOnce(t *testing.T) {
	c := newContainedPair(t)
	e, clk, running, boxed, plain := c.e, c.clk, c.running, c.boxed, c.plain
	hook := &testkit.LoseFirstReply{Script: lua.Claim}
	e.RDB.AddHook(hook)
	e.startWorker(c.h, runtime.Options{Clock: clk, CrashDelay: noCrashDelay, Concurrency: 2, IdlePoll: time.Minute,
		Lease: 30 * time.Second, MaintenanceInterval: time.Hour})
	// the failed claim's back-off (10 ms) only: far less than suspectPoll
	var got string
	for range 100 {
		select {
		case got = <-running:
		case <-time.After(10 * time.Millisecond):
			clk.Advance(5 * time.Millisecond)
			continue
		}
		break
	}
	if !hook.Lost.Load() {
		t.Fatal("no claim reply was lost")
	}
	want := map[string]string{boxed: plain, plain: boxed} // the two may start in either order once both are leased
	next, ok := want[got]
	if !ok {
		t.Fatalf("ran %q, want one of the two suspects", got)
	}
	select {
	case got := <-running:
		if got != next {
			t.Fatalf("ran %s, want %s", got, next)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("the suspect %s behind the contained one (state %s) did not run in 3 s of a fake clock that stood still, "+
			"after a resent claim", plain, e.Job(plain).State)
	}
}
