package isolated

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/outcome"
)

// The outcome of an attempt crosses the process boundary as a replyMsg:
// reply encodes what the child's handler returned, decide turns it back
// into what the worker's runtime understands.

// reply encodes a handler's outcome in the child.
func reply(data []byte, err error, st *attempt.State) replyMsg {
	var (
		snooze *outcome.Snooze
		rl     *outcome.RateLimited
		skip   *outcome.Skip
		revoke *outcome.Revoke
		park   *outcome.Park
	)
	switch {
	case err == nil:
		return replyMsg{Outcome: outcomeOK, Result: data, Complete: st.Final()}
	case errors.As(err, &snooze) && snooze.Delay >= 0:
		return replyMsg{Outcome: outcomeSnooze, DelayMS: snooze.Delay.Milliseconds()}
	case errors.As(err, &rl) && rl.Delay >= 0:
		return replyMsg{Outcome: outcomeRateLimited, DelayMS: rl.Delay.Milliseconds()}
	case errors.As(err, &skip):
		return replyMsg{Outcome: outcomeSkip, Message: skip.Reason}
	case errors.As(err, &revoke):
		return replyMsg{Outcome: outcomeRevoke, Message: revoke.Reason}
	case errors.As(err, &park):
		r := replyMsg{Outcome: outcomePark, Reason: park.Reason}
		if park.Err != nil {
			r.Message = park.Err.Error()
		}
		return r
	}
	return replyMsg{Outcome: outcomeError, Message: err.Error()}
}

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
		return nil, &ChildError{Message: r.Message}
	case outcomeSnooze:
		return nil, &outcome.Snooze{Delay: delay}
	case outcomeRateLimited:
		return nil, &outcome.RateLimited{Delay: delay}
	case outcomeSkip:
		return nil, &outcome.Skip{Reason: r.Message}
	case outcomeRevoke:
		return nil, &outcome.Revoke{Reason: r.Message}
	case outcomePark:
		if r.Reason == "" {
			r.Reason = "parked"
		}
		return nil, &outcome.Park{Reason: r.Reason, Err: errors.New(r.Message)}
	case outcomePanic:
		return nil, &CrashError{Reason: "panic", Message: "panic in isolated child: " + r.Message, Detail: r.Stack}
	}
	return nil, &CrashError{
		Reason:  "child_crash",
		Message: fmt.Sprintf("isolated child %s replied with unknown outcome %q", filepath.Base(s.h.cmd.Path), r.Outcome),
	}
}
