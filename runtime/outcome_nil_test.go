package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type nilOutcomeArgs struct{ Which int }

func (nilOutcomeArgs) Kind() string { return "nil_outcome" }

// nilOutcomes are errors that wrap a typed nil outcome (a variable of the
// outcome's pointer type never set, returned wrapped): fmt prints it as
// <nil>, so its message reads, and errors.As finds it, nil.
var nilOutcomes = []error{
	fmt.Errorf("wrapped: %w", (*sluicetype.SnoozeError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.RateLimitedError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.SkipError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.RevokeError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.CrashError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.WaitingError)(nil)),
	fmt.Errorf("wrapped: %w", (*sluicetype.SuspendedError)(nil)),
}

// TestWrappedNilOutcomeIsAnError: a handler's error that wraps a typed
// nil outcome asks for none: it is an ordinary error of its job (retried,
// here archived: one attempt), and the worker goes on with its other
// jobs. The worker read the outcome's fields after the handler's recovery
// (Classify: a SnoozeError's Delay), where the nil dereference ended its
// process, every job in flight with it.
func TestWrappedNilOutcomeIsAnError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil })
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[nilOutcomeArgs]) error {
		return nilOutcomes[job.Args.Which]
	}))
	e.startWorker(reg, runtime.Options{})
	for i := range nilOutcomes {
		id := e.Enqueue(nilOutcomeArgs{Which: i}, flow.WithMaxAttempts(1))
		if j := e.WaitState(id, flow.StateArchived); j.Attempt != 1 || j.CrashAttempt != 0 {
			t.Errorf("%v: attempt %d, crash_attempt %d, want 1 and 0", nilOutcomes[i], j.Attempt, j.CrashAttempt)
		}
	}
	e.WaitState(e.Enqueue(obsArgs{}), flow.StateCompleted)
}
