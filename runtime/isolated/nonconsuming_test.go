//go:build unix

package isolated_test

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

// TestChildOwnErrorHasNoCause: the child's best-effort step "audit"
// cannot commit (Redis refuses the worker's step calls), its handler
// ignores that and returns an error of its own, which has nothing to do
// with Redis: NonConsuming sees that error alone, as it would in the
// worker's own process, and the attempt is spent (the failed commit's
// error was its Cause, and the attempt put back unspent).
func TestChildOwnErrorHasNoCause(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	hook := &failSteps{}
	hook.on.Store(true)
	e.RDB.AddHook(hook)
	var mu sync.Mutex
	var wrong []string
	e.startWorker(isolate(t, command(), isolated.Options{}, swallowArgs{}.Kind()), runtime.Options{
		Lease: time.Second, Backoff: func(int) time.Duration { return 0 },
		NonConsuming: func(err error) bool {
			hook.on.Store(false)
			transient := errors.Is(err, testkit.ErrInjected)
			if transient && !strings.Contains(err.Error(), testkit.ErrInjected.Error()) {
				mu.Lock()
				wrong = append(wrong, err.Error())
				mu.Unlock()
			}
			return transient
		},
	})
	id := e.Enqueue(swallowArgs{}, flow.WithMaxAttempts(1))
	j := e.WaitState(id, flow.StateArchived)
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		t.Errorf("NonConsuming saw the handler's own error %q as the failed commit's (ChildError.Cause stale); attempt %d, errors %d",
			wrong, j.Attempt, len(j.Errors))
	}
}

// TestChildErrorQuotesFailedCommit: the child's step "a" cannot commit
// (Redis refuses the worker's step calls), step "b" commits afterwards,
// and the handler returns a's error, wrapped: NonConsuming recognises
// the failed commit in it (a later success hid it).
func TestChildErrorQuotesFailedCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	hook := &failSteps{}
	hook.on.Store(true)
	e.RDB.AddHook(hook)
	seen := make(chan error, 10)
	e.startWorker(isolate(t, command(), isolated.Options{}, laterArgs{}.Kind()), runtime.Options{
		Lease: time.Second, Backoff: func(int) time.Duration { return 0 },
		NonConsuming: func(err error) bool {
			seen <- err
			return errors.Is(err, testkit.ErrInjected)
		},
	})
	key := e.key("later")
	id := e.Enqueue(laterArgs{Key: key}, flow.WithMaxAttempts(5))
	t.Logf("the child's step a: %s", e.pop(key+":afailed"))
	hook.on.Store(false) // b commits
	if err := e.RDB.RPush(t.Context(), key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("the attempt never reached NonConsuming (job %s)", id)
	}
	if strings.Contains(err.Error(), testkit.ErrInjected.Error()) && !errors.Is(err, testkit.ErrInjected) {
		t.Errorf("NonConsuming could not recognise the failed commit in %q (ChildError.Cause cleared by b's commit): the attempt is spent", err)
	}
}
