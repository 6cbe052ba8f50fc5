package runtime_test

// A worker's clock may be off from Redis's (store time): what Redis
// decides in store time reaches the worker as a delay, never as a time to
// compare with its own clock. These tests run workers on the wall clock
// against miniredis with its TIME set apart: a worker given another Clock
// uses it as the store's time too (Options.Clock), which no skew survives.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// skewedEnv is an env on a miniredis whose TIME is fixed at storeNow.
func skewedEnv(t *testing.T, storeNow time.Time) (*env, *redis.Client) {
	m := miniredis.RunT(t)
	m.SetTime(storeNow)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}, rdb
}

// claimCount counts claim calls.
type claimCount struct{ n atomic.Int64 }

func (c *claimCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *claimCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *claimCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestIdleWorkerAheadOfRedisWaits: a worker whose clock is an hour ahead
// of Redis's, with one job scheduled 10 minutes out and nothing else to
// do, waits for IdlePoll (5 s) between claims once it is idle: a handful
// of claims in the second that follows at most. (Its claims answered the
// job's due time in store time, always past by the worker's clock: it
// claimed again at once, some two thousand times a second.)
func TestIdleWorkerAheadOfRedisWaits(t *testing.T) {
	t.Parallel()
	e, rdb := skewedEnv(t, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	claims := &claimCount{}
	rdb.AddHook(claims)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	w := e.startWorker(reg, runtime.Options{MaintenanceInterval: time.Hour})
	e.Enqueue(workArgs{N: 1}, flow.WithDelay(10*time.Minute))
	e.Sig.Dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() }) // it has seen the job scheduled
	before := claims.n.Load()
	time.Sleep(time.Second) // the worker's clock is the wall clock
	if n := claims.n.Load() - before; n > 5 {
		t.Errorf("%d claim calls in one idle second (IdlePoll 5 s), with the worker's clock an hour ahead of Redis's", n)
	}
}

// TestDeadlineDecidedInStoreTime: Redis's clock is an hour behind the
// worker's. A job whose deadline is 10 minutes away in store time, with a
// handler that takes 50 ms, completes. (The store-time deadline was
// compared with the worker's clock, long past it: the handler was
// cancelled at once, and the job archived deadline_exceeded without
// having run.)
func TestDeadlineDecidedInStoreTime(t *testing.T) {
	t.Parallel()
	storeNow := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	e, _ := skewedEnv(t, storeNow)
	causes := testkit.Chan[error]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
			causes <- nil
			return nil
		}
	}))
	e.startWorker(reg, runtime.Options{MaintenanceInterval: time.Hour})
	id := e.Enqueue(workArgs{N: 1}, flow.WithDeadline(storeNow.Add(10*time.Minute)))
	if cause := testkit.Recv(t, causes, "the handler to run"); cause != nil {
		t.Fatalf("a deadline 10 minutes away in store time cancelled the handler at once: %v", cause)
	}
	e.WaitState(id, flow.StateCompleted)
}
