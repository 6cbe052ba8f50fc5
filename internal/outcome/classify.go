package outcome

import (
	"errors"

	"github.com/sluicehq/sluice/sluicetype"
)

// Kind is what an error a handler returned asks for.
type Kind int

// The kinds of outcome, in the order Classify tests them.
const (
	KindError       Kind = iota // an ordinary error: a retry, spending an attempt
	KindCrash                   // *sluicetype.CrashError: crash_attempt+1
	KindSnooze                  // *sluicetype.SnoozeError
	KindRateLimited             // *sluicetype.RateLimitedError
	KindSkip                    // *sluicetype.SkipError
	KindRevoke                  // *sluicetype.RevokeError
	KindPark                    // *Park
	KindWait                    // *sluicetype.WaitingError
	KindSuspend                 // *sluicetype.SuspendedError
)

// CrashClass is the error class recorded for a *sluicetype.CrashError
// of no Reason, in a worker and in an isolated child alike.
const CrashClass = "crash"

// Class is a handler's returned error classified: its kind and the value
// of that kind found in its chain (nil for KindError).
type Class struct {
	Kind        Kind
	Crash       *sluicetype.CrashError
	Snooze      *sluicetype.SnoozeError
	RateLimited *sluicetype.RateLimitedError
	Skip        *sluicetype.SkipError
	Revoke      *sluicetype.RevokeError
	Park        *Park
	Wait        *sluicetype.WaitingError
	Suspend     *sluicetype.SuspendedError
}

// Classify finds what err asks for: the first outcome value in its chain,
// in the order of the kinds (a Snooze or RateLimited with a negative delay
// counts as an ordinary error, and so does a typed nil outcome wrapped in
// err, which asks for nothing). It is the one place that reads a
// handler's error; the worker (an ack) and an isolated child (a reply to
// its parent) each map the class to what they send.
func Classify(err error) Class {
	var c Class
	// each value is checked for nil before it is read: errors.As finds a
	// typed nil (fmt.Errorf("...: %w", e) of an e never set, which fmt
	// prints as <nil>), and its fields are read after the handler's
	// recovery, where the panic ended the worker's process
	switch {
	case errors.As(err, &c.Crash) && c.Crash != nil:
		c.Kind = KindCrash
	case errors.As(err, &c.Snooze) && c.Snooze != nil && c.Snooze.Delay >= 0:
		c.Kind = KindSnooze
	case errors.As(err, &c.RateLimited) && c.RateLimited != nil && c.RateLimited.Delay >= 0:
		c.Kind = KindRateLimited
	case errors.As(err, &c.Skip) && c.Skip != nil:
		c.Kind = KindSkip
	case errors.As(err, &c.Revoke) && c.Revoke != nil:
		c.Kind = KindRevoke
	case errors.As(err, &c.Park) && c.Park != nil:
		c.Kind = KindPark
	case errors.As(err, &c.Wait) && c.Wait != nil:
		c.Kind = KindWait
	case errors.As(err, &c.Suspend) && c.Suspend != nil:
		c.Kind = KindSuspend
	}
	return c
}
