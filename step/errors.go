package step

import (
	"errors"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/internal/store"
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
	ErrDuplicateStep = attempt.ErrDuplicateStep
	// ErrStaleCheckpoint: the job's checkpoints were written by a handler
	// whose step sequence differs from this one.
	ErrStaleCheckpoint = errors.New("sluice: stale checkpoint: the step sequence changed since it was written")
	// ErrResult: a step's result cannot be encoded, or is larger than
	// MaxResult.
	ErrResult = errors.New("sluice: step result cannot be checkpointed")
	// ErrStale: the attempt lost its lease; its checkpoint was rejected, or
	// a step boundary did not run the step's function, and its context is
	// cancelled.
	ErrStale = store.ErrStale
	// ErrInvalidEffect: an effect is malformed.
	ErrInvalidEffect = store.ErrInvalidEffect
)

// EffectError reports effects that could not apply (a key of the wrong
// type, a non-numeric counter): nothing of the step was written, and the
// attempt fails like any returned error.
type EffectError = store.EffectError

// park wraps err so that the runtime archives the job with reason.
func park(reason string, err error) error {
	return &outcome.Park{Reason: reason, Err: err}
}
