package sluicetype

import (
	"fmt"
	"time"
)

// The errors below decide what happens to a job when its handler returns
// them (directly or wrapped). Build them with flow.Snooze, flow.Skip, ...;
// match them with errors.As.

// SnoozeError reschedules the job after Delay without spending an attempt.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snooze for %s", e.Delay) }

// RateLimitedError puts the job back (after Delay; 0 at once, behind the
// waiting work) without spending an attempt or recording a failure.
type RateLimitedError struct{ Delay time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s", e.Delay)
}

// SkipError archives the job at once with Reason; it is not retried (an
// operator can redrive it).
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skip: " + e.Reason }

// RevokeError cancels the job for good with Reason; it is never retried.
type RevokeError struct{ Reason string }

func (e *RevokeError) Error() string { return "revoke: " + e.Reason }

// WaitingError suspends a parent job until the children it waits for have
// finished (or, with FailFast, one of them failed), without holding a
// worker or spending an attempt. Children names them (their IDs in the
// parent's partition, as flow.Join finds them) and Count is how many
// they are; with no Children, the wait is over once Count children
// spawned by its step Step have finished, whichever they are. Recheck is
// a safety net: the parent runs again after it even if no wake-up came.
// flow.Join returns it; a handler passes it on.
type WaitingError struct {
	Step     string
	Count    int
	Children []string
	FailFast bool
	Recheck  time.Duration
}

func (e *WaitingError) Error() string {
	return fmt.Sprintf("waiting for %d children of step %q", e.Count, e.Step)
}

// CrashError counts the attempt as a crash (crash attempt +1, quarantined
// at the crash limit) rather than as a returned error, like a panic: for a
// handler that lost the code it ran, such as an isolated child process
// that died by a signal or exited without a valid reply.
type CrashError struct {
	Reason  string // the error class recorded, e.g. "child_crash"; "crash" when empty
	Message string
	Detail  []byte // recorded like a panic's stack, e.g. the child's stderr tail
}

func (e *CrashError) Error() string { return e.Message }

// SuspendedError suspends a workflow job until the first of its waits
// fires: a timer reaches its wake time, or one of the named signals is
// sent to the job (or is there already). The job holds no worker, no
// lease and no attempt meanwhile, then runs again from the top with its
// finished steps skipped. step.Sleep, step.WaitSignal and
// step.Selector.Wait return it; a handler returns it, wrapped or not.
type SuspendedError struct {
	Timers  []Timer
	Signals []string
}

func (e *SuspendedError) Error() string {
	return fmt.Sprintf("suspended on %d timers and %d signals", len(e.Timers), len(e.Signals))
}

// Timer is a durable timer of a workflow job, named per job. Its wake time
// is fixed the first time the job waits on it, in Redis's time: After
// that moment, or At when At is set. A timer keeps its wake time across
// attempts, crashes and redrives.
type Timer struct {
	Name  string
	After time.Duration
	At    time.Time
}
