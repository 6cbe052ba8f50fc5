package store

import (
	"fmt"

	"github.com/sluicehq/sluice/sluicetype"
)

// Errors the store reports. Script status codes are mapped to these in
// status.go and nowhere else.
var (
	// ErrStale: the attempt's identity (lease ID, fence) is no longer current;
	// nothing was written.
	ErrStale = sluicetype.ErrStale
	// ErrConflict: a job with the caller's ID exists with other content.
	ErrConflict = sluicetype.ErrConflict
	// ErrNotFound: no job has this ID (never enqueued, or deleted after its
	// retention).
	ErrNotFound = sluicetype.ErrNotFound
	// ErrMalformed: data read from Redis is not a valid job.
	ErrMalformed = sluicetype.ErrMalformed
	// ErrRetired: an enqueue reached a partition that went away when its
	// queue shrank (Retire): nothing was added. The caller's layout of the
	// queue is out of date; it is sluicetype.ErrLayoutMismatch to
	// errors.Is, wherever it surfaces (a spawn, a relayed follow-up).
	ErrRetired = fmt.Errorf("%w: the partition went away in a resize of its queue", sluicetype.ErrLayoutMismatch)
)
