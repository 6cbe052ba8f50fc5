package flow

import (
	"errors"

	"github.com/sluicehq/sluice/sluicetype"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrInvalid: bad input (kind, queue name, ID, duration, option).
	ErrInvalid = errors.New("sluice: invalid input")
	// ErrPayloadTooLarge: the encoded arguments exceed MaxPayload, or the
	// encoded headers (WithHeaders) MaxHeaders.
	ErrPayloadTooLarge = errors.New("sluice: payload too large")
	// ErrUnknownKind: the kind has no handler in the client's registry.
	ErrUnknownKind = errors.New("sluice: unknown job kind")
	// ErrDuplicateKind: a handler for the kind is already registered.
	ErrDuplicateKind = errors.New("sluice: job kind registered twice")
	// ErrConflict: a job with the requested ID exists with another kind or
	// payload.
	ErrConflict = sluicetype.ErrConflict
	// ErrNotFound: no job has this ID.
	ErrNotFound = sluicetype.ErrNotFound
	// ErrMalformed: data read from Redis is not a valid job.
	ErrMalformed = sluicetype.ErrMalformed
	// ErrStale: an attempt's write was rejected because its lease and fence
	// are no longer current.
	ErrStale = sluicetype.ErrStale
	// ErrNewerDataModel: a newer release changed what the partition's keys
	// mean; nothing was written. Upgrade this process.
	ErrNewerDataModel = sluicetype.ErrNewerDataModel
	// ErrChildResult: a child's result cannot be decoded into the type its
	// parent's Join or Call asks for. The parent is parked (archived,
	// reason child_result): every attempt would meet it.
	ErrChildResult = errors.New("sluice: a child's result cannot be decoded into the type its parent asks for")
	// ErrResultType: Result cannot decode a completed job's result into
	// the type it was asked for. The job is unchanged; ask again with the
	// type its handler returns.
	ErrResultType = errors.New("sluice: a job's result cannot be decoded into the type asked for")
)
