package admin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/flow"
)

// reasonStates holds every reason Sluice records on a job that finished
// (JobInfo.Reason), with the one state it finishes a job in: the scripts'
// own ('attempts_exhausted', 'operator', ...) and the park reasons the Go
// code gives. A selector naming one of them on another state would match
// no job, so it is refused (Selector.checkReason); a reason not listed is
// refused on every state but archived, where an isolated child's own park
// reason lands (the protocol lets a child name any). TestReasonsAgreeWithCode
// reads the scripts and the Go code and fails when this list and they
// differ.
var reasonStates = map[string]string{
	// written by the scripts
	"attempts_exhausted": flow.StateArchived,
	"skipped":            flow.StateArchived,
	"deadline_exceeded":  flow.StateArchived,
	"malformed":          flow.StateArchived, // also a park reason
	"sticky_unavailable": flow.StateArchived,
	"crash_limit":        flow.StateQuarantined,
	"operator":           flow.StateCancelled,
	"revoked":            flow.StateCancelled,
	// park reasons, given by the Go code (docs/state-machine.md)
	"unknown_kind":        flow.StateArchived,
	"malformed_payload":   flow.StateArchived,
	"stale_checkpoint":    flow.StateArchived,
	"invalid_step":        flow.StateArchived,
	"duplicate_step":      flow.StateArchived,
	"step_result":         flow.StateArchived,
	"invalid_version":     flow.StateArchived,
	"invalid_wait":        flow.StateArchived,
	"bad_signal":          flow.StateArchived,
	"child_result":        flow.StateArchived,
	"on_complete_in_step": flow.StateArchived,
	"step_in_step":        flow.StateArchived,
	"parked":              flow.StateArchived,
}

// Reasons returns, sorted, the reasons Sluice records on jobs that
// finished in state (flow.StateArchived, StateCancelled,
// StateQuarantined; none for StateCompleted), or on any job for "": the
// values Selector.Reason takes.
//
// An isolated child may park a job (archived) with a reason of its own,
// which is not listed.
func Reasons(state string) []string {
	var out []string
	for r, s := range reasonStates {
		if state == "" || s == state {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// checkReason refuses a Reason no job of sel.State can have: one Sluice
// records on another state, or, but for archived jobs (an isolated
// child's park reason may be any), one it never records (a typing error).
// A scan would match nothing, and say so as if nothing needed doing.
func (sel Selector) checkReason() error {
	if sel.Reason == "" {
		return nil
	}
	s, ok := reasonStates[sel.Reason]
	if !ok && sel.State == flow.StateArchived {
		return nil
	}
	if !ok {
		return fmt.Errorf("%w: reason %q: Sluice records no such reason (%s jobs: %s)", flow.ErrInvalid, sel.Reason,
			sel.State, reasonList(sel.State))
	}
	if s != sel.State {
		return fmt.Errorf("%w: reason %q is recorded on %s jobs, not %s ones (%s jobs: %s)", flow.ErrInvalid, sel.Reason,
			s, sel.State, sel.State, reasonList(sel.State))
	}
	return nil
}

// reasonList is Reasons(state) for a message: "a, b, c", or "none".
func reasonList(state string) string {
	if rs := Reasons(state); len(rs) > 0 {
		return strings.Join(rs, ", ")
	}
	return "none"
}

// UnmatchedReasonError is the error of RedriveSelected and DeleteSelected
// when a whole scan by a Reason that Sluice never records itself (only an
// isolated child's park can, on an archived job) matched no job: most
// likely a misspelling, not "0 jobs" done to report as a success.
type UnmatchedReasonError struct {
	Queue, State, Reason string
}

func (e *UnmatchedReasonError) Error() string {
	return fmt.Sprintf("no %s job of queue %q has reason %q, which Sluice does not record itself (only an isolated child's park can); %s jobs have one of: %s",
		e.State, e.Queue, e.Reason, e.State, reasonList(e.State))
}

// unmatched is sel's UnmatchedReasonError when a scan that matched
// matched jobs chose by a reason Sluice does not record and found none;
// nil otherwise.
func (sel Selector) unmatched(matched int) error {
	if sel.Reason == "" || matched > 0 || slices.Contains(Reasons(sel.State), sel.Reason) {
		return nil
	}
	return &UnmatchedReasonError{Queue: sel.Queue, State: sel.State, Reason: sel.Reason}
}
