package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type nilPanicArgs struct{ Wrapped bool }

func (nilPanicArgs) Kind() string { return "nil_panic" }

// TestReturnedPanicErrorOfNoValueIsACrash: a handler that returns a
// *runtime.PanicError with no value (&runtime.PanicError{}, or one
// wrapped) crashes its attempt, as one with a value does and as
// panic(nil) does. Its nil value read as no panic at all, and the job
// was completed: a handler's error turned into a success.
func TestReturnedPanicErrorOfNoValueIsACrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil })
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[nilPanicArgs]) error {
		if job.Args.Wrapped {
			return fmt.Errorf("in the handler: %w", &runtime.PanicError{})
		}
		return &runtime.PanicError{}
	}))
	e.startWorker(reg, runtime.Options{CrashLimit: 2, CrashDelay: time.Millisecond})
	for _, wrapped := range []bool{false, true} {
		id := e.Enqueue(nilPanicArgs{Wrapped: wrapped})
		j, err := testkit.AwaitState(e.Client, e.Sig, id, flow.StateQuarantined, 10*time.Second)
		if err != nil {
			j = e.Job(id)
		}
		if j.State != flow.StateQuarantined || j.CrashAttempt != 2 || j.Attempt != 0 {
			t.Errorf("wrapped %v: %s, attempt %d, crash_attempt %d; want quarantined after 2 crashes", wrapped, j.State, j.Attempt, j.CrashAttempt)
		}
	}
}
