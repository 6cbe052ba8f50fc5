package store

import (
	"errors"
	"strings"

	"github.com/sluicehq/sluice/sluicetype"
)

// Errors the store reports. Script status codes are mapped to these here and
// nowhere else.
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
)

// Enqueue statuses, one per job.
const (
	statusNew      = "new"
	statusExists   = "exists"
	statusConflict = "conflict"
	statusUnique   = "unique" // followed by a space and the holder's ID
	statusTaken    = "taken"  // a generated ID another job has: retried
	statusStale    = "stale"
)

// EnqueueStatus says what an enqueue did with one job.
type EnqueueStatus int

// What an enqueue did.
const (
	Added      EnqueueStatus = iota // the job was added
	Duplicate                       // the same job (ID, kind, payload) already exists: no-op
	Conflicted                      // the ID is taken by a different job
	Held                            // another job holds the unique key: nothing added
	// taken: the job's generated ID was another job's; Enqueue retries it
	// with a new one and never returns this status.
	taken
)

func enqueueResult(s string) (EnqueueResult, error) {
	switch s {
	case statusNew:
		return EnqueueResult{Status: Added}, nil
	case statusExists:
		return EnqueueResult{Status: Duplicate}, nil
	case statusConflict:
		return EnqueueResult{Status: Conflicted, Err: ErrConflict}, nil
	case statusTaken:
		return EnqueueResult{Status: taken}, nil
	}
	if q, ok := strings.CutPrefix(s, "held "); ok {
		return EnqueueResult{Status: Added, HeldBy: q}, nil
	}
	if holder, ok := strings.CutPrefix(s, statusUnique+" "); ok {
		return EnqueueResult{Status: Held, Existing: holder}, nil
	}
	return EnqueueResult{}, errors.New("sluice: unexpected enqueue status " + s)
}

// ackState maps an ack script answer to the job's new state or ErrStale.
func ackState(s string) (string, error) {
	if s == statusStale {
		return "", ErrStale
	}
	return s, nil
}
