package sluicetype

import (
	"errors"
	"time"
)

// Errors shared by Sluice's packages; match them with errors.Is. The
// packages that return them also export them under their own names
// (flow.ErrNotFound is ErrNotFound).
var (
	// ErrNotFound: no job has this ID (never enqueued, or deleted after
	// its retention).
	ErrNotFound = errors.New("sluice: job not found")
	// ErrConflict: a job with the caller's ID exists with another kind or
	// other arguments. The error is a *ConflictError naming the job.
	ErrConflict = errors.New("sluice: a job with this ID exists with a different kind or payload")
	// ErrMalformed: data read from Redis is not a valid job.
	ErrMalformed = errors.New("sluice: malformed job data in Redis")
	// ErrStale: the attempt's identity (lease ID and fence) is no longer
	// current, because its lease expired and the job was reclaimed, or it
	// was cancelled; the write was refused and nothing of it was written.
	ErrStale = errors.New("sluice: stale attempt: the lease or fence moved on")
	// ErrWrongState: the job's state does not allow an operator's call
	// (deleting a running job, cancelling a finished one, redriving one
	// that is not archived or cancelled, releasing one that is not
	// quarantined, running now one that is not scheduled or retryable).
	// The error is a *StateError.
	ErrWrongState = errors.New("sluice: the job's state does not allow this")
	// ErrInvalidEffect: an effect is malformed (unknown op, no key, bad
	// arguments); nothing of its commit was written.
	ErrInvalidEffect = errors.New("sluice: invalid effect")
	// ErrDuplicateStep: a step name was used twice in one attempt.
	ErrDuplicateStep = errors.New("sluice: step name used twice in one attempt")
	// ErrNoDeadEffect: no dead-lettered effect has this ID.
	ErrNoDeadEffect = errors.New("sluice: dead effect not found")
	// ErrNoEffectToRelay: a dead-lettered entry that holds no effect (a
	// parent's notification, or an entry that could not be read), or one
	// first written too long ago to tell whether it applied (six days),
	// cannot be sent back to the outbox; it is listed, and left as it is.
	ErrNoEffectToRelay = errors.New("sluice: the dead-lettered entry holds no effect to relay")
	// ErrScheduleNotFound: no scheduler has run a schedule of this name
	// in the namespace.
	ErrScheduleNotFound = errors.New("sluice: schedule not found")
	// ErrNewerDataModel: a newer release of Sluice changed what the
	// partition's keys mean; this process's scripts refused it and wrote
	// nothing. Upgrade the process.
	ErrNewerDataModel = errors.New("sluice: the partition has a newer data model than this release")
)

// StateError says which job was in which state when an operator's call
// refused it. errors.Is(err, ErrWrongState) matches it.
type StateError struct {
	ID    string // the job
	Op    string // cancel, delete, redrive, release, run now
	State string // the state it was in
	// Why says more when the state alone does not explain the refusal (a
	// scheduled job that RunNow refuses as a suspended workflow, or as
	// held behind a quarantined job); "" otherwise.
	Why string
}

func (e *StateError) Error() string {
	s := "sluice: cannot " + e.Op + " job " + e.ID + ": it is " + e.State
	if e.Why != "" {
		s += " (" + e.Why + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrWrongState) true.
func (e *StateError) Is(target error) bool { return target == ErrWrongState }

// OtherJobError: a call that named a job by its ID and its creation time
// (admin.Client.DiscardSignalOf) found another job under the ID, created
// at Created (the one named was deleted and its ID given to a new job).
// Nothing was written. errors.Is(err, ErrWrongState) matches it.
type OtherJobError struct {
	ID      string    // the job ID (queue:partition:id)
	Created time.Time // the creation time of the job now under the ID
}

func (e *OtherJobError) Error() string {
	return "sluice: job " + e.ID + " is another job, created " + e.Created.UTC().Format(time.RFC3339Nano) + ": nothing written"
}

// Is makes errors.Is(err, ErrWrongState) true.
func (e *OtherJobError) Is(target error) bool { return target == ErrWrongState }

// MovedOnError: a call that named a job by what a tool showed of it (its
// fence, the attempts it began, or its count of redrives: admin.Shown)
// found the job moved on since, keeping its creation time: it ran again
// (Field "fence") or was redriven (Field "redrives"). Nothing was
// written. errors.Is(err, ErrWrongState) matches it.
type MovedOnError struct {
	ID    string // the job ID (queue:partition:id)
	Field string // "fence" or "redrives": what is not as shown
	State string // the state the job is in now
}

func (e *MovedOnError) Error() string {
	why := "ran again"
	if e.Field == "redrives" {
		why = "was redriven"
	}
	return "sluice: job " + e.ID + " " + why + " since it was shown (it is " + e.State + " now): nothing written"
}

// Is makes errors.Is(err, ErrWrongState) true.
func (e *MovedOnError) Is(target error) bool { return target == ErrWrongState }

// ConflictError: a job could not be enqueued because its ID (WithID) is
// taken by an existing job with another kind or other arguments.
// errors.Is(err, ErrConflict) matches it.
type ConflictError struct {
	ID string // the existing job's ID (queue:partition:id), which was asked for
}

func (e *ConflictError) Error() string {
	return "sluice: job " + e.ID + " exists with a different kind or payload"
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// EffectError reports an effect that Redis cannot apply to the key as it
// is (the key holds another type, a number would overflow, ...). Nothing
// of its commit was written.
type EffectError struct{ Msg string }

func (e *EffectError) Error() string { return "sluice: effect cannot apply: " + e.Msg }
