package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// brokenErr is an error whose Error method panics on a nil receiver: a
// handler that returns a typed nil (var e *brokenErr; return e) returns a
// non-nil error that cannot tell its message.
type brokenErr struct{ msg string }

func (e *brokenErr) Error() string { return e.msg }

type brokenErrArgs struct{ Tracked bool }

func (brokenErrArgs) Kind() string { return "broken_err" }

// TestErrorMethodPanicIsTheAttemptsCrash: a handler (or a tracked
// goroutine) whose returned error panics when the worker reads its message
// crashes its attempt, as a panic in the handler does, and the worker goes
// on with its other jobs. The message was read after the handler's
// recovery, where the panic ended the worker's process, every job in
// flight with it.
func TestErrorMethodPanicIsTheAttemptsCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil })
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[brokenErrArgs]) error {
		var bad *brokenErr
		if !job.Args.Tracked {
			return bad
		}
		a, _ := runtime.AttemptFrom(ctx)
		return a.Go(func(context.Context) error { return bad })
	}))
	e.startWorker(reg, runtime.Options{CrashLimit: 2, CrashDelay: time.Millisecond})
	for _, tracked := range []bool{false, true} {
		bad := e.Enqueue(brokenErrArgs{Tracked: tracked})
		if j := e.WaitState(bad, flow.StateQuarantined); j.CrashAttempt != 2 || j.Attempt != 0 {
			t.Errorf("tracked %v: attempt %d, crash_attempt %d, want 0 and 2", tracked, j.Attempt, j.CrashAttempt)
		}
	}
	e.WaitState(e.Enqueue(obsArgs{}), flow.StateCompleted)
}
