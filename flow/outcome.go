package flow

import (
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// The outcome errors below are the types of package sluicetype
// (SnoozeError, RateLimitedError, SkipError, RevokeError): match them
// with errors.As.

// Snooze reschedules the job to run again after d, spending no attempt. A
// negative d is a mistake and is treated as an ordinary error.
func Snooze(d time.Duration) error { return &sluicetype.SnoozeError{Delay: d} }

// RateLimited puts the job back to run after d (0: at once, behind waiting
// work) without spending an attempt or recording a failure: for an
// upstream that said "slow down".
func RateLimited(d time.Duration) error { return &sluicetype.RateLimitedError{Delay: d} }

// Skip archives the job at once with reason; it is not retried (an operator
// can redrive it).
func Skip(reason string) error { return &sluicetype.SkipError{Reason: reason} }

// Revoke cancels the job for good with reason; it is never retried.
func Revoke(reason string) error { return &sluicetype.RevokeError{Reason: reason} }
