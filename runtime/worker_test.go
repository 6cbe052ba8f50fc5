package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
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
