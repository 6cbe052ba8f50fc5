package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestScriptFlushMidRun flushes the server's function libraries (and
// script cache) while jobs are in flight: their acks, the claims and
// enqueues that follow are all refused as unknown functions, load their
// libraries and run, and every job completes.
//
// Not parallel: it checks that the libraries really are gone after the
// flush, which other tests' workers would load again at once.
func TestScriptFlushMidRun(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	started := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-release
		return nil
	}))
	e.startWorker(reg, runtime.Options{Concurrency: 10})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	var ids []string
	for i := range 5 {
		ids = append(ids, e.Enqueue(workArgs{N: i}))
	}
	for range 5 {
		testkit.Recv(t, started, "the first jobs to start")
	}
	scripts := []*lua.Script{lua.Enqueue, lua.Claim, lua.Ack, lua.Renew}
	testkit.Must(t, e.RDB.FunctionFlush(ctx).Err())
	testkit.Must(t, e.RDB.ScriptFlush(ctx).Err())
	for _, sc := range scripts {
		if loaded(t, e.RDB, sc) {
			t.Fatalf("script %s still loaded after FUNCTION FLUSH", sc.Function())
		}
	}
	close(release) // acks after the flush
	for i := 5; i < 10; i++ {
		// with a priority, not plain: listed and claimed, where a plain
		// job would be pushed to the idle worker's offer (push.go)
		ids = append(ids, e.Enqueue(workArgs{N: i}, flow.WithPriority(1)))
	}
	for _, id := range ids {
		checkSummary(t, id, e.WaitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	}
	for _, sc := range scripts[:3] {
		if !loaded(t, e.RDB, sc) {
			t.Errorf("script %s not reloaded (enqueue, claim, ack ran since)", sc.Function())
		}
	}
}

// loaded reports whether the server has sc's function library.
func loaded(t *testing.T, rdb redis.UniversalClient, sc *lua.Script) bool {
	t.Helper()
	libs, err := rdb.FunctionList(context.Background(), redis.FunctionListQuery{LibraryNamePattern: "s" + sc.Function()}).Result()
	testkit.Must(t, err)
	return len(libs) == 1
}

// TestIdleWorkerWokenByPush: a worker whose idle poll is an hour away
// (real clock) picks up a new job at once: the enqueue's pub/sub wake-up,
// not polling, brings it.
func TestIdleWorkerWokenByPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := testkit.Chan[time.Time]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- time.Now()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	// The worker is idle once a claim found the partition dry (and set
	// its idle flag, KEYS[8] of lua/lib.lua).
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })

	enqueued := time.Now()
	id := e.Enqueue(workArgs{N: 1})
	// Its next poll is an hour away: only the wake-up can bring the job.
	at := testkit.Recv(t, ran, "the idle worker to pick up the new job")
	t.Logf("job started %v after enqueue", at.Sub(enqueued))
	e.WaitState(id, flow.StateCompleted)
}

// TestWakeAllAfterResubscribe: wake-ups published while the worker's
// subscription was down are lost, so when go-redis re-establishes it (here
// after CLIENT KILL; on a cluster, after a failover of its node) the
// worker claims from every partition again instead of waiting for its
// idle poll (an hour away).
func TestWakeAllAfterResubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.RDB = redis.NewClient(&redis.Options{Addr: shared.Server.Addr(), ClientName: e.NS})
	t.Cleanup(func() { _ = e.RDB.Close() })
	ran := testkit.Chan[time.Time]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- time.Now()
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	ctx := context.Background()
	idle := e.partition().Script()[7]
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	// Lose the wake-up: without the idle flag the enqueue publishes none.
	testkit.Must(t, e.RDB.Del(ctx, idle).Err())
	id := e.Enqueue(workArgs{N: 1})
	testkit.NoRecv(t, ran, "a job without a wake-up")

	clients, err := e.RDB.ClientList(ctx).Result()
	testkit.Must(t, err)
	killed := 0
	for _, line := range strings.Split(clients, "\n") {
		if !strings.Contains(line, " name="+e.NS+" ") || !strings.Contains(line, " sub=") || strings.Contains(line, " sub=0 ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				testkit.Must(t, e.RDB.Do(ctx, "CLIENT", "KILL", "ID", v).Err())
				killed++
			}
		}
	}
	if killed == 0 { // the wake-ups' and the cancellations' subscriptions
		t.Fatalf("no subscription of the worker's client:\n%s", clients)
	}
	testkit.Recv(t, ran, "the job after the resubscription")
	e.WaitState(id, flow.StateCompleted)
}

// TestIdlePollWhileBusy: the IdlePoll safety net holds per partition, so
// a job whose wake-up was lost (its partition's idle flag deleted) is
// picked up while another partition keeps the worker busy, not only once
// the worker runs out of work. On a test clock: the busy jobs end one by
// one when the test says, and the lost job's poll falls due when the
// test moves the clock.
func TestIdlePollWhileBusy(t *testing.T) {
	t.Parallel()
	const poll = 200 * time.Millisecond
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	ctx := context.Background()
	parts := map[string]int{"default": 2, "probe": 2}
	c, err := flow.NewClient(e.RDB, flow.ClientOptions{Namespace: e.NS, Partitions: parts, Clock: clk})
	testkit.Must(t, err)
	// A key per partition, found on a queue no worker serves (the
	// partition depends only on the key and the partition count).
	key := map[string]string{}
	for i := 0; len(key) < 2; i++ {
		res, err := c.Enqueue(ctx, workArgs{N: i}, flow.WithQueue("probe"), flow.WithPartitionKey(fmt.Sprint("k", i)))
		testkit.Must(t, err)
		if p := strings.Split(res.ID, ":")[1]; key[p] == "" {
			key[p] = fmt.Sprint("k", i)
		}
	}
	const busy = 20
	var busyIDs []string
	for i := range busy {
		res, err := c.Enqueue(ctx, workArgs{N: i}, flow.WithPartitionKey(key["0"]))
		testkit.Must(t, err)
		busyIDs = append(busyIDs, res.ID)
	}
	proceed, stop := make(chan struct{}), make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		if job.Args.N >= 0 { // busy until the test lets it go
			select {
			case <-proceed:
			case <-stop:
			}
		}
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Partitions: parts, Concurrency: 1, IdlePoll: poll, MaintenanceInterval: time.Hour})
	var stopOnce sync.Once
	release := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(release)    // before the worker stops
	finishOne := func() { // the busy job running ends; the worker claims again
		t.Helper()
		select {
		case proceed <- struct{}{}:
		case <-time.After(waitTimeout):
			t.Fatal("no busy job is running")
		}
	}
	claimed := func() string {
		t.Helper()
		return e.Sig.Claimed.WaitFor(t, func(c testsignal.Claimed) bool { return c.Worker == w.ID() }).JobID
	}
	finished := 0
	claimed() // a busy job holds the only slot
	for dry := false; !dry; {
		if finished == busy/2 {
			t.Fatalf("partition 1 not claimed while %d busy jobs ran", finished)
		}
		finishOne()
		finished++
		claimed()
		for _, d := range e.Sig.Dry.Drain() { // sent before the claim that followed
			dry = dry || d.Queue == "default" && d.Partition == 1
		}
	}
	idle := keys.Partition{NS: e.NS, Queue: "default", Index: 1}.Script()[7]
	testkit.Must(t, e.RDB.Del(ctx, idle).Err()) // the next enqueue publishes no wake-up
	res, err := c.Enqueue(ctx, workArgs{N: -1}, flow.WithPartitionKey(key["1"]))
	testkit.Must(t, err)
	lost := res.ID
	if !strings.HasPrefix(lost, "default:1:") {
		t.Fatalf("job %s is not on partition 1", lost)
	}
	clk.Advance(poll) // partition 1's poll is due
	for {
		if finished == busy {
			// the lost job would run last: the worker waited until partition 0 was dry
			t.Fatalf("the job without a wake-up was not claimed while the %d busy jobs ran", busy)
		}
		finishOne()
		finished++
		if claimed() == lost {
			break
		}
	}
	t.Logf("the job without a wake-up was claimed after %d of %d busy jobs", finished, busy)
	e.WaitState(lost, flow.StateCompleted)
	// Let the rest run to the end before the worker stops: the test clock
	// ends the shutdown window at once, and an attempt still starting then
	// meets a race of the runtime's (Worker.execute's grace watch, which
	// shutdown calls, reads the attempt's context while execute still
	// derives it).
	release()
	for _, id := range busyIDs {
		e.WaitState(id, flow.StateCompleted)
	}
}

// TestRunTwiceIsErrRunning: a second Run of a running worker returns the
// sentinel ErrRunning at once, and the first goes on.
func TestRunTwiceIsErrRunning(t *testing.T) {
	t.Parallel()
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	sig := testsignal.NewWorker()
	idle := sig.Idle.Subscribe()
	defer idle.Close()
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, sig)
	idle.WaitFor(t, func(testsignal.Idle) bool { return true })              // the first Run is under way
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // were it the first, it ends
	defer cancel()
	if err := w.Worker.Run(ctx); !errors.Is(err, runtime.ErrRunning) {
		t.Fatalf("a second Run: %v, want ErrRunning", err)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("the first Run: %v", err)
	}
}
