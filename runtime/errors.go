package runtime

import (
	"errors"

	"github.com/sluicehq/sluice/sluicetype"
)

// Causes of an attempt's context cancellation; read them with
// context.Cause(ctx).
var (
	// ErrLeaseLost: the worker no longer holds the job's lease (it expired,
	// another worker took the job, or an operator moved it). Nothing the
	// attempt writes to Sluice state will be accepted.
	ErrLeaseLost = errors.New("sluice: lease lost")
	// ErrTimeout: the attempt ran longer than its timeout.
	ErrTimeout = errors.New("sluice: attempt timed out")
	// ErrDeadline: the job's deadline passed.
	ErrDeadline = errors.New("sluice: job deadline exceeded")
	// ErrShutdown: the worker is shutting down and the shutdown window ended.
	ErrShutdown = errors.New("sluice: worker shutting down")
	// ErrEffectsFailed is what a RetryPolicy sees for an attempt whose
	// handler returned nil but whose completion effects could not apply
	// (the attempt is retried).
	ErrEffectsFailed = errors.New("sluice: the completion's effects could not apply")
)

// ErrStale is returned when an attempt's write is rejected because its
// lease ID and fence are no longer current.
var ErrStale = sluicetype.ErrStale

// ErrInvalidOptions reports a bad worker configuration.
var ErrInvalidOptions = errors.New("sluice: invalid worker options")

// ErrRunning is what Run returns, at once, for a worker that is running
// already (a Run that has not returned).
var ErrRunning = errors.New("sluice: worker is already running")
