package runtime_test

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
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// deadClaims is a go-redis hook that, once armed, fails every claim at
// once as an unreachable node does (ErrInjected), counting the partitions
// whose claims failed, and holds every claim sent with a deadline (the
// one a stopping worker sends again, handBackClaims) until that deadline,
// as a node that accepts connections and answers nothing does.
type deadClaims struct {
	armed  atomic.Bool
	mu     sync.Mutex
	failed map[string]bool // by the claim's first key
}

func (d *deadClaims) DialHook(next redis.DialHook) redis.DialHook { return next }
func (d *deadClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (d *deadClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if !d.armed.Load() || len(args) < 4 || !lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		if _, ok := ctx.Deadline(); ok {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		d.mu.Lock()
		d.failed[fmt.Sprint(args[3])[:strings.Index(fmt.Sprint(args[3]), "}")+1]] = true
		d.mu.Unlock()
		cmd.SetErr(testkit.ErrInjected)
		return testkit.ErrInjected
	}
}

func (d *deadClaims) partitions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.failed)
}

// TestShutdownWindowDuringOutage: a worker stopped while Redis does not
// answer its claims (each of its partitions' claims failed, and sending
// them again as it stops hangs until nodeTimeout) cancels its in-flight
// jobs when ShutdownWindow has passed since shutdown began, as documented
// (docs/guarantees.md, Options.ShutdownWindow). A helper's audit found
// the window opened only once the worker had sent again, one partition
// after the other, every failed claim: with 4 partitions, 8 s and more
// past a window of half a second, a process given a fixed time to stop
// (a container's grace period) killed before its jobs were handed back.
func TestShutdownWindowDuringOutage(t *testing.T) {
	t.Parallel()
	const (
		parts  = 4
		window = 500 * time.Millisecond
	)
	rdb := shared.Client(t)
	hook := &deadClaims{failed: map[string]bool{}}
	rdb.AddHook(hook)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{Partitions: map[string]int{"default": parts}})}
	started := testkit.Chan[string]()
	cause := testkit.Chan[error]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}))
	id := e.Enqueue(workArgs{N: 1})
	w := e.StartWorker(reg, runtime.Options{ShutdownWindow: window, IdlePoll: 10 * time.Millisecond,
		Partitions: map[string]int{"default": parts}, Logger: testkit.Quiet})
	if got := testkit.Recv(t, started, "the job to start"); got != id {
		t.Fatalf("started %s, want %s", got, id)
	}
	hook.armed.Store(true)
	redistest.Within(t, waitTimeout, "claims to fail on every partition", func() (bool, string) {
		n := hook.partitions()
		return n == parts, fmt.Sprintf("%d partitions", n)
	})
	begun := time.Now()
	w.Cancel()
	got := testkit.Recv(t, cause, "the in-flight job to be cancelled")
	took := time.Since(begun)
	if !errors.Is(got, runtime.ErrShutdown) {
		t.Errorf("the job was cancelled with %v, want ErrShutdown", got)
	}
	if took > window+time.Second {
		t.Errorf("the in-flight job was cancelled %v after shutdown began, want about the shutdown window, %v", took, window)
	}
	hook.armed.Store(false)
	testkit.Must(t, w.Stop())
}
