package flow

import (
	"time"

	"github.com/sluicehq/sluice/internal/outcome"
)

// Outcome error types, for errors.As.
type (
	// SnoozeError reschedules a job without spending an attempt.
	SnoozeError = outcome.Snooze
	// RateLimitedError puts a job back without spending an attempt or
	// recording a failure.
	RateLimitedError = outcome.RateLimited
	// SkipError archives a job at once.
	SkipError = outcome.Skip
	// RevokeError cancels a job for good.
	RevokeError = outcome.Revoke
)

// Snooze reschedules the job to run again after d, spending no attempt. A
// negative d is a mistake and is treated as an ordinary error.
func Snooze(d time.Duration) error { return &outcome.Snooze{Delay: d} }

// RateLimited puts the job back to run after d (0: at once, behind waiting
// work) without spending an attempt or recording a failure: for an
// upstream that said "slow down".
func RateLimited(d time.Duration) error { return &outcome.RateLimited{Delay: d} }

// Skip archives the job at once with reason; it is not retried (an operator
// can redrive it).
func Skip(reason string) error { return &outcome.Skip{Reason: reason} }

// Revoke cancels the job for good with reason; it is never retried.
func Revoke(reason string) error { return &outcome.Revoke{Reason: reason} }
