//go:build unix

package isolated_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// failSteps fails the worker's step commits (lua.Step) while on is set,
// as a Redis that cannot be reached would; fails counts them.
type failSteps struct {
	on    atomic.Bool
	fails atomic.Int64
}

func (f *failSteps) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failSteps) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (f *failSteps) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if f.on.Load() && len(args) > 1 && lua.Step.Is(cmd.Name(), fmt.Sprint(args[1])) {
			f.fails.Add(1)
			cmd.SetErr(testkit.ErrInjected)
			return testkit.ErrInjected
		}
		return next(ctx, cmd)
	}
}

// TestChildErrorCarriesCommitFailure: a child's step whose commit the
// worker could not make (Redis refused its step calls for longer than the
// worker sends them again, a lease) fails, and the child's handler
// returns that failure: the attempt's error carries the worker's error
// of the commit (isolated.ChildError.Cause), so that the worker's
// NonConsuming, which puts transient failures back without spending an
// attempt, recognises it as it does in the worker's own process. It was
// an opaque message, and each such attempt was spent.
func TestChildErrorCarriesCommitFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	hook := &failSteps{}
	hook.on.Store(true)
	e.RDB.AddHook(hook)
	var seen atomic.Pointer[error]
	e.startWorker(isolate(t, command(), isolated.Options{}, oneStepArgs{}.Kind()), runtime.Options{
		Lease: time.Second, Backoff: func(int) time.Duration { return 0 },
		NonConsuming: func(err error) bool {
			seen.Store(&err)
			hook.on.Store(false) // the next attempt commits
			var ce *isolated.ChildError
			return errors.As(err, &ce) && errors.Is(err, testkit.ErrInjected)
		},
	})
	id := e.Enqueue(oneStepArgs{})
	j := e.WaitState(id, flow.StateCompleted)
	p := seen.Load()
	if p == nil {
		t.Fatalf("the attempt whose commit failed (%d calls refused) never reached NonConsuming", hook.fails.Load())
	}
	if j.Attempt != 0 || len(j.Errors) != 0 {
		t.Errorf("attempt %d, errors %+v, want none spent: NonConsuming saw %v (%T)", j.Attempt, j.Errors, *p, *p)
	}
}
