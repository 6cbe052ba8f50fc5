package isolated

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// The outcome of an attempt crosses the process boundary as a replyMsg:
// reply encodes what the child's handler returned, decide turns it back
// into what the worker's runtime understands.

// reply encodes a handler's outcome in the child.
func reply(data []byte, err error, st *attempt.State) replyMsg {
	if err == nil {
		return replyMsg{Outcome: outcomeOK, Result: data, Complete: st.Final()}
	}
	// A *runtime.PanicError the handler returned (or wrapped) is its
	// panic, as in a worker (runtime's recovered, before any other
	// outcome): replied as an error, it spent an attempt instead of
	// charging a crash.
	var pe *runtime.PanicError
	if errors.As(err, &pe) {
		v := pe.Value
		if v == nil { // as runtime's recovered tells one of no value: a nil panic
			v = new(goruntime.PanicNilError)
		}
		return replyMsg{Outcome: outcomePanic, Message: fmt.Sprint(v), Stack: pe.Stack}
	}
	// A wait for children does not cross the boundary: the child has no
	// children of its own to wait for. A workflow's suspension (timers,
	// signals) does, and so does a *CrashError the handler returned (one
	// that lost code it ran, such as a process of its own): a crash in a
	// worker, it is one here too, not a returned error. Its message is
	// the returned error's, wrappers included, as a worker records it
	// (runtime's classify): the CrashError's own lost what the handler
	// said around it.
	switch c := outcome.Classify(err); c.Kind {
	case outcome.KindCrash:
		// of no Reason, the class a worker gives it: decide makes an
		// empty one (a child of an older build) "child_crash", which this
		// child, alive and replying, is not
		reason := cmp.Or(c.Crash.Reason, outcome.CrashClass)
		return replyMsg{Outcome: outcomeCrash, Reason: reason, Message: err.Error(), Stack: c.Crash.Detail}
	case outcome.KindSnooze:
		return replyMsg{Outcome: outcomeSnooze, DelayMS: delayMS(c.Snooze.Delay)}
	case outcome.KindRateLimited:
		return replyMsg{Outcome: outcomeRateLimited, DelayMS: delayMS(c.RateLimited.Delay)}
	case outcome.KindSkip:
		return replyMsg{Outcome: outcomeSkip, Message: c.Skip.Reason}
	case outcome.KindRevoke:
		return replyMsg{Outcome: outcomeRevoke, Message: c.Revoke.Reason}
	case outcome.KindSuspend:
		return replyMsg{Outcome: outcomeSuspend, Suspend: c.Suspend}
	case outcome.KindPark:
		r := replyMsg{Outcome: outcomePark, Reason: c.Park.Reason, Text: err.Error()}
		if c.Park.Err != nil {
			r.Message = c.Park.Err.Error()
		}
		return r
	}
	return replyMsg{Outcome: outcomeError, Message: err.Error()}
}

// delayMS is a snooze's or a rate limit's delay in whole ms, as the
// worker's ack gives it to Redis (store's ms): a positive delay under 1 ms
// is 1, not 0, which made the job due at once, where the same handler in
// a worker has it wait 1 ms.
func delayMS(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

// crashed reports whether a reply reports a crash: a panic, or a crash the
// handler returned.
func crashed(r *replyMsg) bool { return r.Outcome == outcomePanic || r.Outcome == outcomeCrash }

// decide returns, in the worker, what the child's reply means: a result
// (with the completion effects staged on the attempt) or an outcome error.
func (s *session) decide(r *replyMsg) ([]byte, error) {
	delay := time.Duration(r.DelayMS) * time.Millisecond
	switch r.Outcome {
	case outcomeOK:
		s.st.OnComplete(r.Complete...)
		return r.Result, nil
	case outcomeError:
		if r.Message == "" {
			r.Message = "isolated: the child's handler failed"
		}
		ce := &ChildError{Message: r.Message, Cause: s.failedIn(r.Message)}
		if r.RetryMS != nil && *r.RetryMS >= 0 {
			ce.retry, ce.retrySet = time.Duration(*r.RetryMS)*time.Millisecond, true
		}
		return nil, ce
	case outcomeSnooze:
		return nil, &sluicetype.SnoozeError{Delay: delay}
	case outcomeRateLimited:
		return nil, &sluicetype.RateLimitedError{Delay: delay}
	case outcomeSkip:
		return nil, &sluicetype.SkipError{Reason: r.Message}
	case outcomeRevoke:
		return nil, &sluicetype.RevokeError{Reason: r.Message}
	case outcomePark:
		if r.Reason == "" {
			r.Reason = "parked"
		}
		park := &outcome.Park{Reason: r.Reason, Err: errors.New(r.Message)}
		if r.Text != "" && r.Text != park.Error() {
			return nil, &toldError{text: r.Text, err: park}
		}
		return nil, park
	case outcomeSuspend:
		if r.Suspend == nil {
			break
		}
		return nil, r.Suspend
	case outcomePanic:
		return nil, &sluicetype.CrashError{Reason: "panic", Message: "panic in isolated child: " + r.Message, Detail: r.Stack}
	case outcomeCrash:
		if r.Reason == "" {
			r.Reason = "child_crash"
		}
		return nil, &sluicetype.CrashError{Reason: r.Reason, Message: r.Message, Detail: r.Stack}
	}
	return nil, &sluicetype.CrashError{
		Reason:  "child_crash",
		Message: fmt.Sprintf("isolated child %s replied with unknown outcome %q", filepath.Base(s.h.cmd.Path), r.Outcome),
	}
}

// toldError is an outcome a child's handler returned wrapped: its
// message is the returned error's, as a worker records it, and errors.As
// finds the outcome in it.
type toldError struct {
	text string
	err  error
}

func (e *toldError) Error() string { return e.text }

func (e *toldError) Unwrap() error { return e.err }
