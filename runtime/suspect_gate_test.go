package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// slowClaims is a go-redis hook that holds every claim on one partition
// until release is closed (a slow or unreachable node, a long claim
// script): the call is in flight meanwhile.
type slowClaims struct {
	prefix  string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *slowClaims) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *slowClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) >= 4 && lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) && strings.HasPrefix(fmt.Sprint(args[3]), h.prefix) {
			h.once.Do(func() { close(h.entered) })
			select {
			case <-h.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

type gateArgs struct{ N int }

func (gateArgs) Kind() string { return "gate" }

// TestSuspectNotHeldBySlowClaim: while no suspect runs in the process,
// Worker B runs its suspect even though Worker A (another queue) has a
// claim in flight for a long time: a claim holds no part of the process's
// suspect rule while it is out.
func TestSuspectNotHeldBySlowClaim(t *testing.T) {
	e := newEnv(t, nil)
	hook := &slowClaims{
		prefix:  keys.Partition{NS: e.NS, Queue: "qa", Index: 0}.Prefix(),
		entered: make(chan struct{}), release: make(chan struct{}),
	}
	e.RDB.AddHook(hook)
	var releaseOnce sync.Once
	releaseHook := func() { releaseOnce.Do(func() { close(hook.release) }) }

	running := testkit.Chan[int]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		if job.CrashAttempt == 0 {
			panic("first attempt crashes: the job becomes a suspect")
		}
		running <- job.CrashAttempt
		return nil
	}))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Queues: map[string]int{"qa": 1}, Concurrency: 2, IdlePoll: 50 * time.Millisecond})
	testkit.Recv(t, hook.entered, "A's claim to be in flight")
	id := e.Enqueue(gateArgs{N: 1}, flow.WithQueue("qb"))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Queues: map[string]int{"qb": 1}, Concurrency: 2, IdlePoll: 50 * time.Millisecond})
	t.Cleanup(releaseHook) // runs before the workers stop

	select {
	case n := <-running:
		t.Logf("the suspect ran (crash_attempt %d) while A's claim was in flight", n)
	case <-time.After(3 * time.Second):
		j := e.Job(id)
		t.Errorf("no suspect runs in the process, yet B's suspect (state %s, crash_attempt %d) did not run in 3 s: "+
			"A's claim in flight on another queue holds the process-wide suspects reservation", j.State, j.CrashAttempt)
		releaseHook()
		select {
		case n := <-running:
			t.Logf("once A's claim returned, the suspect ran at once (crash_attempt %d)", n)
		case <-time.After(3 * time.Second):
			t.Logf("the suspect did not run after A's claim returned either")
		}
	}
}

type chainArgs struct{ N int }

func (chainArgs) Kind() string { return "busy_chain" }

// TestSuspectNotStarvedByBusyWorker: Worker A works a busy queue (each
// job enqueues the next, so its claims follow each other with no pause);
// Worker B, in the same process, has one suspect on another queue and
// nothing else to run: with no suspect running in the process, B runs it.
func TestSuspectNotStarvedByBusyWorker(t *testing.T) {
	e := newEnv(t, nil)
	running := testkit.Chan[int]()
	stop := make(chan struct{})
	busy, ran := make(chan struct{}), atomic.Int32{} // A has run 50 jobs
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		if job.CrashAttempt == 0 {
			panic("first attempt crashes: the job becomes a suspect")
		}
		running <- job.CrashAttempt
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[chainArgs]) error {
		if ran.Add(1) == 50 {
			close(busy)
		}
		select {
		case <-stop:
		default:
			_, _ = e.Client.Enqueue(context.WithoutCancel(ctx), chainArgs{N: 1}, flow.WithQueue("qa"))
		}
		return nil
	}))
	items := make([]flow.Item, 64)
	for i := range items {
		items[i] = flow.Item{Args: chainArgs{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("qa")}}
	}
	if _, err := e.Client.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Queues: map[string]int{"qa": 1}, Concurrency: 16, ClaimBatch: 1, IdlePoll: 50 * time.Millisecond})
	testkit.Recv(t, busy, "A to be busy")
	id := e.Enqueue(gateArgs{N: 1}, flow.WithQueue("qb"))
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay, Queues: map[string]int{"qb": 1}, Concurrency: 2, IdlePoll: 50 * time.Millisecond})
	t.Cleanup(func() { close(stop) })
	begin := time.Now()
	select {
	case n := <-running:
		t.Logf("the suspect ran (crash_attempt %d) after %v", n, time.Since(begin))
	case <-time.After(5 * time.Second):
		j := e.Job(id)
		t.Errorf("B's suspect (state %s, crash_attempt %d) did not run in 5 s with no suspect running in the process: "+
			"A's back-to-back claims hold the process-wide reservation", j.State, j.CrashAttempt)
	}
}
