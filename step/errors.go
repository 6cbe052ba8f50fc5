package step

import (
	"errors"

	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/sluicetype"
)

// Errors of this package; match them with errors.Is. The ones that describe
// a bug in the handler (a duplicate name, a changed sequence, a result that
// cannot be stored) park the job when the handler returns them: it is
// archived with a reason, nothing is lost, and an operator can redrive it
// once the code is fixed.
var (
	// ErrNoAttempt: a step function was called outside a Sluice handler.
	ErrNoAttempt = errors.New("sluice: step called outside a running job")
	// ErrInvalidName: a step name is empty, too long or has characters
	// other than letters, digits, '_', '.', '-' and '/'.
	ErrInvalidName = errors.New("sluice: invalid step name")
	// ErrDuplicateStep: a step name was used twice in one attempt.
	ErrDuplicateStep = sluicetype.ErrDuplicateStep
	// ErrStaleCheckpoint: the job's checkpoints were written by a handler
	// whose step sequence differs from this one.
	ErrStaleCheckpoint = errors.New("sluice: stale checkpoint: the step sequence changed since it was written")
	// ErrResult: a step's result cannot be encoded, cannot be decoded
	// back into its type (a non-empty interface field), or is larger
	// than MaxResult.
	ErrResult = errors.New("sluice: step result cannot be checkpointed")
	// ErrStale: the attempt lost its lease; its checkpoint was rejected, or
	// a step boundary did not run the step's function, and its context is
	// cancelled.
	ErrStale = sluicetype.ErrStale
	// ErrInvalidEffect: an effect is malformed.
	ErrInvalidEffect = sluicetype.ErrInvalidEffect
	// ErrOnCompleteInStep: OnComplete was called inside a step function,
	// where its effects would be lost once the step is checkpointed and a
	// later attempt completes the job; nothing was staged and the step
	// fails. Call OnComplete at handler level.
	ErrOnCompleteInStep = errors.New("sluice: step.OnComplete inside a step function: call it at handler level, outside Run, Do and Commit")
	// ErrStepInStep: a step (Run, Do, Commit, a wait, a cursor, a
	// flow.Spawn) was begun inside another step's function. A later
	// attempt replays the outer step from its checkpoint without running
	// its function, so the inner step would take a position in the
	// sequence in one attempt and not in the next; nothing of the inner
	// step ran and the outer step fails. Call steps at handler level.
	ErrStepInStep = errors.New("sluice: a step inside another step's function: call steps at handler level, outside Run, Do and Commit")
)

// park wraps err so that the runtime archives the job with reason.
func park(reason string, err error) error {
	return &outcome.Park{Reason: reason, Err: err}
}
