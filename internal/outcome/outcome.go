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
