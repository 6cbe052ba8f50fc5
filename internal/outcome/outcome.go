// Package outcome defines the control-flow errors a handler returns to
// decide what happens to its job. The flow package exposes them to users;
// the runtime maps them to ack codes. They live here, below both, so
// neither has to import the other.
package outcome

import (
	"fmt"
	"time"
)

// Snooze reschedules the job after Delay without spending an attempt.
type Snooze struct{ Delay time.Duration }

func (e *Snooze) Error() string { return fmt.Sprintf("snooze for %s", e.Delay) }

// RateLimited puts the job back (after Delay) without spending an attempt
// or recording a failure.
type RateLimited struct{ Delay time.Duration }

func (e *RateLimited) Error() string { return fmt.Sprintf("rate limited, retry after %s", e.Delay) }

// Skip archives the job at once (terminal), with a reason.
type Skip struct{ Reason string }

func (e *Skip) Error() string { return "skip: " + e.Reason }

// Revoke cancels the job for good: it is never retried.
type Revoke struct{ Reason string }

func (e *Revoke) Error() string { return "revoke: " + e.Reason }

// Park archives a job that cannot run as it is (unknown kind, undecodable
// payload). Reason is the archive reason operators see.
type Park struct {
	Reason string
	Err    error
}

func (e *Park) Error() string { return e.Reason + ": " + e.Err.Error() }

func (e *Park) Unwrap() error { return e.Err }

// Wait suspends a parent job until the Count children spawned by Step have
// finished (or, with FailFast, one of them failed), without holding a
// worker or spending an attempt. Recheck is a safety net: the parent runs
// again after it even if no wake-up came.
type Wait struct {
	Step     string
	Count    int
	FailFast bool
	Recheck  time.Duration
}

func (e *Wait) Error() string {
	return fmt.Sprintf("waiting for %d children of step %q", e.Count, e.Step)
}
