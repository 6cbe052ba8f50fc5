package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// silentRedis is a go-redis hook that, once armed, holds every command
// sent with a deadline until that deadline, as a server that accepts
// connections and answers nothing does, and fails the others at once.
type silentRedis struct{ armed atomic.Bool }

func (*silentRedis) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*silentRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s *silentRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !s.armed.Load() {
			return next(ctx, cmd)
		}
		if _, ok := ctx.Deadline(); ok {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		cmd.SetErr(testkit.ErrInjected)
		return testkit.ErrInjected
	}
}

// TestShutdownBoundWhileRedisSilent: an idle worker stopped while Redis
// answers nothing returns from Run within the bound Run documents
// (ShutdownWindow plus CancelGrace plus the longest lease, plus 5 s for
// the last relay). A helper's audit found the registry's leave, after the
// relay, given 5 s of its own: 12 s where the bound said 8.2.
func TestShutdownBoundWhileRedisSilent(t *testing.T) {
	t.Parallel()
	const (
		lease  = 3 * time.Second
		window = 100 * time.Millisecond
		grace  = 100 * time.Millisecond
	)
	rdb := shared.Client(t)
	hook := &silentRedis{}
	rdb.AddHook(hook)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	dry := e.Sig.Dry.Subscribe()
	defer dry.Close()
	w := e.StartWorker(reg, runtime.Options{Lease: lease, ShutdownWindow: window, CancelGrace: grace,
		IdlePoll: 50 * time.Millisecond, Logger: testkit.Quiet})
	dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() })
	hook.armed.Store(true)
	time.Sleep(200 * time.Millisecond) // a claim fails
	begun := time.Now()
	w.Cancel()
	select {
	case <-w.Done():
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	took := time.Since(begun)
	hook.armed.Store(false)
	if bound := window + grace + lease + 5*time.Second; took > bound {
		t.Errorf("Run took %v to return while Redis answered nothing, past its documented bound %v", took, bound)
	}
	t.Logf("Run took %v", took)
}
