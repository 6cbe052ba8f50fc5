package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestScriptFlushMidRun flushes the server's script cache while jobs are
// in flight: their acks, the claims and enqueues that follow all get
// NOSCRIPT, fall back to EVAL (which reloads the scripts) and every job
// completes.
//
// Not parallel: it checks that the cache really is empty after the flush,
// which other tests' workers would refill at once.
func TestScriptFlushMidRun(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	started := signal[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
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
		ids = append(ids, e.enqueue(workArgs{N: i}))
	}
	for range 5 {
		recv(t, started, "the first jobs to start")
	}
	hashes := []string{lua.Enqueue.Hash(), lua.Claim.Hash(), lua.Ack.Hash(), lua.Renew.Hash()}
	must(t, e.rdb.ScriptFlush(ctx).Err())
	if ok, err := e.rdb.ScriptExists(ctx, hashes...).Result(); err != nil || ok[0] || ok[1] || ok[2] || ok[3] {
		t.Fatalf("scripts cached after SCRIPT FLUSH: %v (%v)", ok, err)
	}
	close(release) // acks after the flush
	for i := 5; i < 10; i++ {
		ids = append(ids, e.enqueue(workArgs{N: i}))
	}
	for _, id := range ids {
		checkSummary(t, id, e.waitState(id, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
	}
	ok, err := e.rdb.ScriptExists(ctx, hashes[:3]...).Result()
	if err != nil || !ok[0] || !ok[1] || !ok[2] {
		t.Errorf("enqueue, claim, ack not reloaded: %v (%v)", ok, err)
	}
}

// TestIdleWorkerWokenByPush: a worker whose idle poll is an hour away
// (real clock) picks up a new job at once: the enqueue's pub/sub wake-up,
// not polling, brings it.
func TestIdleWorkerWokenByPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ran := signal[time.Time]()
	reg := flow.NewRegistry()
	must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- time.Now()
		return nil
	}))
	e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	// The worker is idle once a claim found the partition dry and set its
	// idle flag (KEYS[8] of lua/lib.lua).
	idle := e.partition().Script()[7]
	eventually(t, "the worker to go idle", func() (bool, string) {
		n, err := e.rdb.Exists(context.Background(), idle).Result()
		return err == nil && n == 1, "idle flag not set"
	})

	enqueued := time.Now()
	id := e.enqueue(workArgs{N: 1})
	select {
	case at := <-ran:
		t.Logf("job started %v after enqueue", at.Sub(enqueued))
	case <-time.After(5 * time.Second):
		t.Fatal("an idle worker did not pick up a new job within 5s")
	}
	e.waitState(id, flow.StateCompleted)
}

// TestWakeAllAfterResubscribe: wake-ups published while the worker's
// subscription was down are lost, so when go-redis re-establishes it (here
// after CLIENT KILL; on a cluster, after a failover of its node) the
// worker claims from every partition again instead of waiting for its
// idle poll (an hour away).
func TestWakeAllAfterResubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.rdb = redis.NewClient(&redis.Options{Addr: shared.Server.Addr(), ClientName: e.ns})
	t.Cleanup(func() { _ = e.rdb.Close() })
	ran := signal[time.Time]()
	reg := flow.NewRegistry()
	must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- time.Now()
		return nil
	}))
	e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	ctx := context.Background()
	idle := e.partition().Script()[7]
	eventually(t, "the worker to go idle", func() (bool, string) {
		n, err := e.rdb.Exists(ctx, idle).Result()
		return err == nil && n == 1, "idle flag not set"
	})
	// Lose the wake-up: without the idle flag the enqueue publishes none.
	must(t, e.rdb.Del(ctx, idle).Err())
	id := e.enqueue(workArgs{N: 1})
	noRecv(t, ran, "a job without a wake-up")

	clients, err := e.rdb.ClientList(ctx).Result()
	must(t, err)
	killed := 0
	for _, line := range strings.Split(clients, "\n") {
		if !strings.Contains(line, " name="+e.ns+" ") || !strings.Contains(line, " sub=1 ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				must(t, e.rdb.Do(ctx, "CLIENT", "KILL", "ID", v).Err())
				killed++
			}
		}
	}
	if killed == 0 { // the wake-ups' and the cancellations' subscriptions
		t.Fatalf("no subscription of the worker's client:\n%s", clients)
	}
	recv(t, ran, "the job after the resubscription")
	e.waitState(id, flow.StateCompleted)
}

// TestIdlePollWhileBusy: the IdlePoll safety net holds per partition, so
// a job whose wake-up was lost (its partition's idle flag deleted) is
// picked up while another partition keeps the worker busy, not only once
// the worker runs out of work.
func TestIdlePollWhileBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	parts := map[string]int{"default": 2, "probe": 2}
	c, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Partitions: parts})
	must(t, err)
	// A key per partition, found on a queue no worker serves (the
	// partition depends only on the key and the partition count).
	key := map[string]string{}
	for i := 0; len(key) < 2; i++ {
		res, err := c.Enqueue(ctx, workArgs{N: i}, flow.WithQueue("probe"), flow.WithPartitionKey(fmt.Sprint("k", i)))
		must(t, err)
		if p := strings.Split(res.ID, ":")[1]; key[p] == "" {
			key[p] = fmt.Sprint("k", i)
		}
	}
	const busy = 150
	for i := range busy {
		_, err := c.Enqueue(ctx, workArgs{N: i}, flow.WithPartitionKey(key["0"]))
		must(t, err)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	reg := flow.NewRegistry()
	must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		mu.Lock()
		order = append(order, job.Args.N)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return nil
	}))
	e.startWorker(reg, runtime.Options{Partitions: parts, Concurrency: 1, IdlePoll: 200 * time.Millisecond, MaintenanceInterval: time.Hour})
	idle := keys.Partition{NS: e.ns, Queue: "default", Index: 1}.Script()[7]
	eventually(t, "the first claim on partition 1", func() (bool, string) {
		n, err := e.rdb.Exists(ctx, idle).Result()
		return err == nil && n == 1, "idle flag not set"
	})
	must(t, e.rdb.Del(ctx, idle).Err()) // the next enqueue publishes no wake-up
	res, err := c.Enqueue(ctx, workArgs{N: -1}, flow.WithPartitionKey(key["1"]))
	must(t, err)
	lost := res.ID
	if !strings.HasPrefix(lost, "default:1:") {
		t.Fatalf("job %s is not on partition 1", lost)
	}
	e.waitState(lost, flow.StateCompleted)
	mu.Lock()
	defer mu.Unlock()
	if len(order) > busy { // the lost job ran last: the worker waited until partition 0 was dry
		t.Fatalf("the job without a wake-up ran after all %d busy jobs: %v", busy, order)
	}
	t.Logf("the job without a wake-up ran after %d of %d busy jobs", len(order)-1, busy)
}
