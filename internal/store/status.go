package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// Statuses are what scripts answer besides job states, data and counts.
// Each is named once in Lua (STATUS, lua/lib_names.lua) and once here,
// and this file alone maps them to what callers see
// (TestLuaStatusesAgree checks that the two lists agree):
//
//	status         script               result or error
//	"ok"           cancel, delete,      the job's previous state
//	               runnow
//	               redrive ids          nil
//	               step                 CheckpointResult{Outboxed: n}
//	               deadfx revive        nil
//	               schedule             Claimed (claim), nil (sync, ack, pause, resume, delete)
//	"missing"      cancel, delete,      ErrNotFound
//	               redrive ids, runnow
//	               deadfx revive        ErrNoDeadEffect
//	               schedule             ErrNoSchedule
//	""             renew                Lost.State "": the job is gone
//	               reroute              ErrNotFound
//	               watch                ErrNotFound
//	"stale"        ack                  AckResult.Err ErrStale
//	               step                 ErrStale
//	"new"          enqueue              Added
//	"exists"       enqueue              Duplicate
//	               step                 ErrStepDone
//	               signal               SignalResult.Duplicate
//	"conflict"     enqueue              Conflicted, ErrConflict
//	"changed " f   cancel, delete,      *sluicetype.MovedOnError (ErrWrongState)
//	               runnow, redrive ids
//	"taken"        enqueue              taken: Enqueue retries with a new ID
//	"unique " id   enqueue              Held, Existing id
//	"held " id     enqueue              Added, HeldBy id
//	"past_deadline " dl due
//	               enqueue              ErrDeadlineNotAfterDue, for that job alone
//	"retired"      enqueue              ErrRetired: the partition went away in a shrink
//	               deadfx revive        ErrRetired
//	               runnow               *sluicetype.StateError (ErrWrongState), Why names id
//	"final"        cancel, signal       *sluicetype.StateError (ErrWrongState)
//	"running"      delete               *sluicetype.StateError (ErrWrongState)
//	               schedule delete      ErrScheduleRunning
//	"suspended"    runnow               *sluicetype.StateError (ErrWrongState), Why says so
//	a state        redrive ids, runnow  *sluicetype.StateError (ErrWrongState)
//	"effect_error" step                 *sluicetype.EffectError
//	"empty"        deadfx revive        ErrNoDeadEffect
//	"applied"      relay                nil
//	"duplicate"    relay                nil
//	"error: " msg  relay                *sluicetype.EffectError
//	"moved"        schedule claim       ClaimMoved
//	"paused"       schedule claim       ClaimPaused
//	"malformed"    step, enqueue        ErrMalformed, for that job alone
//	-1             claim (next due)     ClaimResult.Dry, not Scheduled
//	-2             claim (next due)     not Dry: it leased all it was asked for
//	-3             claim (next due)     ClaimResult.Dry and HeldSuspects
//	-4             renew (a state)      the lease ID among Renew's late ones
//
// Other answers are job states (ack: the new state; renew: the current
// one) or data.
const (
	statusOK           = "ok"
	statusMissing      = "missing"
	statusNone         = ""
	statusStale        = "stale"
	statusNew          = "new"
	statusExists       = "exists"
	statusConflict     = "conflict"
	statusChanged      = "changed " // followed by the field not as shown (fence, redrives)
	statusTaken        = "taken"
	statusUnique       = "unique "        // followed by the holder's ID
	statusHeld         = "held "          // followed by the quarantined job's ID
	statusPastDeadline = "past_deadline " // followed by the job's deadline and due time (ms)
	statusRetired      = "retired"
	statusFinal        = "final"
	statusRunning      = "running"
	statusSuspended    = "suspended"
	statusEffectError  = "effect_error"
	statusEmpty        = "empty"
	statusApplied      = "applied"
	statusDuplicate    = "duplicate"
	statusError        = "error: " // followed by why the effect cannot apply
	statusMoved        = "moved"
	statusPaused       = "paused"
	statusMalformed    = "malformed"
	statusNoDue        = -1
	statusClaimedAll   = -2
	statusHeldSuspects = -3
	statusLate         = -4
)

// EnqueueStatus says what an enqueue did with one job.
type EnqueueStatus int

// What an enqueue did.
const (
	Added      EnqueueStatus = iota // the job was added
	Duplicate                       // the same job (ID, kind, payload) already exists: no-op
	Conflicted                      // the ID is taken by a different job
	Held                            // another job holds the unique key: nothing added
	Failed                          // the call that carried the job failed (Err): not added, unless only its reply was lost
	// taken: the job's generated ID was another job's; Enqueue retries it
	// with a new one and never returns this status.
	taken
)

// Claim statuses of a schedule (ClaimTicks).
const (
	Claimed      = statusOK     // last moved: the ticks are the caller's to enqueue and Ack
	ClaimMoved   = statusMoved  // another scheduler moved last first
	ClaimPaused  = statusPaused // the schedule is paused
	claimMissing = statusMissing
)

// enqueueResult maps enqueue.lua's status for one job.
func enqueueResult(s string) (EnqueueResult, error) {
	switch s {
	case statusNew:
		return EnqueueResult{Status: Added}, nil
	case statusExists:
		return EnqueueResult{Status: Duplicate}, nil
	case statusConflict:
		return EnqueueResult{Status: Conflicted, Err: ErrConflict}, nil
	case statusTaken:
		return EnqueueResult{Status: taken}, nil
	case statusRetired:
		return EnqueueResult{}, ErrRetired
	case statusMalformed:
		return EnqueueResult{Status: Failed, Err: fmt.Errorf("%w: a key the job needs (its unique key, rate class or quarantine hold) holds another type than Sluice wrote", ErrMalformed)}, nil
	}
	if q, ok := strings.CutPrefix(s, statusHeld); ok {
		return EnqueueResult{Status: Added, HeldBy: q}, nil
	}
	if holder, ok := strings.CutPrefix(s, statusUnique); ok {
		return EnqueueResult{Status: Held, Existing: holder}, nil
	}
	if times, ok := strings.CutPrefix(s, statusPastDeadline); ok {
		dl, due, _ := strings.Cut(times, " ")
		d, err1 := strconv.ParseInt(dl, 10, 64)
		u, err2 := strconv.ParseInt(due, 10, 64)
		if err1 != nil || err2 != nil {
			return EnqueueResult{}, fmt.Errorf("%w: enqueue status %q", ErrMalformed, s)
		}
		return EnqueueResult{Status: Failed, Err: fmt.Errorf("%w: deadline %s, due time %s by its delay (store time): it could never run; nothing was added",
			ErrDeadlineNotAfterDue, time.UnixMilli(d).UTC().Format(time.RFC3339Nano), time.UnixMilli(u).UTC().Format(time.RFC3339Nano))}, nil
	}
	return EnqueueResult{}, errors.New("sluice: unexpected enqueue status " + s)
}

// ackResult maps an ack script answer to what the ack did: the job's new
// state (and reason "malformed" for a job archived for its corrupt data),
// or ErrStale.
func ackResult(s string) AckResult {
	switch s {
	case statusStale:
		return AckResult{Err: ErrStale}
	case statusMalformed: // archived for its corrupt data (lua/ack.lua)
		return AckResult{State: "archived", Reason: statusMalformed}
	}
	return AckResult{State: s}
}

// adminStatus maps an operator script's { status, state } answer for the
// job local to its previous state or an error.
func adminStatus(op, local, status, state string) (string, error) {
	switch status {
	case statusOK:
		return state, nil
	case statusMissing:
		return "", ErrNotFound
	}
	// statusFinal, statusRunning, or (redrive) the job's state
	return "", &sluicetype.StateError{ID: local, Op: op, State: state}
}

// runNowStatus maps runnow.lua's { status, state } answer for the job
// ref to its previous state or an error: a *sluicetype.StateError whose
// Why explains a refused scheduled job.
func runNowStatus(ref keys.Ref, status, state string) (string, error) {
	const op = "run now"
	if status == statusSuspended {
		return "", &sluicetype.StateError{ID: ref.Local, Op: op, State: state,
			Why: "a workflow suspended on its waits: its timers keep their wake times, and a signal it waits for wakes it"}
	}
	if q, ok := strings.CutPrefix(status, statusHeld); ok {
		held := keys.Ref{Partition: ref.Partition, Local: q}
		return "", &sluicetype.StateError{ID: ref.Local, Op: op, State: state,
			Why: "held behind quarantined job " + held.String() + ": release or delete that job"}
	}
	return adminStatus(op, ref.Local, status, state)
}

// redriveStatus maps redrive.lua's answer for the job local ('ids' mode):
// statusOK, statusMissing, statusMalformed, or the job's state.
func redriveStatus(op, local, status string) error {
	switch status {
	case statusOK:
		return nil
	case statusMalformed:
		return fmt.Errorf("%w: %s: job %s: its key holds another type than a hash, or its state field names no state", ErrMalformed, op, local)
	}
	_, err := adminStatus(op, local, status, status)
	return err
}

// rerouteState maps reroute.lua's answer: the job's
// state, statusNone or statusMalformed.
func rerouteState(state string) (string, error) {
	switch state {
	case statusNone:
		return "", ErrNotFound
	case statusMalformed:
		return "", fmt.Errorf("%w: reroute: the job's state field names no state", ErrMalformed)
	case "completed": // refused: it never runs again
		return state, &sluicetype.StateError{Op: "reroute", State: state}
	}
	return state, nil
}

// checkpointResult maps step.lua's { status, detail } for one checkpoint.
func checkpointResult(pair []any) CheckpointResult {
	status, _ := pair[0].(string)
	switch status {
	case statusOK:
		n, _ := pair[1].(int64)
		return CheckpointResult{Outboxed: int(n)}
	case statusStale:
		return CheckpointResult{Err: ErrStale}
	case statusExists:
		return CheckpointResult{Err: ErrStepDone}
	case statusEffectError:
		msg, _ := pair[1].(string)
		return CheckpointResult{Err: &sluicetype.EffectError{Msg: msg}}
	case statusMalformed:
		return CheckpointResult{Err: fmt.Errorf("%w: the job's checkpoints key holds another type than Sluice wrote", ErrMalformed)}
	}
	return CheckpointResult{Err: fmt.Errorf("%w: step status %q", ErrMalformed, status)}
}

// reviveStatus maps deadfx.lua's 'revive' answer for the dead entry id.
func reviveStatus(id, status string) error {
	switch status {
	case statusOK:
		return nil
	case statusEmpty:
		return fmt.Errorf("%w (a parent's notification, or an unreadable entry)", sluicetype.ErrNoEffectToRelay)
	case statusStale:
		return fmt.Errorf("%w: it was first written more than %v ago, past which whether it applied cannot be told (the relay would dead-letter it again)",
			sluicetype.ErrNoEffectToRelay, relayMaxAge)
	case statusRetired:
		return fmt.Errorf("%w: no worker relays its outbox; left dead (resize the queue back to take the partition back, then send it again)", ErrRetired)
	}
	return fmt.Errorf("%w: %s", ErrNoDeadEffect, id) // statusMissing
}

// relayStatus maps relay.lua's answer for the effect op on key:
// statusApplied and statusDuplicate are done, statusError never applies.
func relayStatus(op, key, status string) error {
	if msg, failed := strings.CutPrefix(status, statusError); failed {
		return &sluicetype.EffectError{Msg: fmt.Sprintf("%s %s: %s", op, key, msg)}
	}
	return nil
}

// claimDue maps the next-due entry of claim.lua's answer.
// A due time is a delay (ms) from the claim's store time.
func claimDue(nd int64) (dry, heldSuspects, scheduled bool, next time.Duration) {
	switch {
	case nd == statusClaimedAll:
		return false, false, false, 0
	case nd == statusHeldSuspects:
		return true, true, false, 0
	case nd < 0: // statusNoDue
		return true, false, false, 0
	}
	return true, false, true, time.Duration(nd) * time.Millisecond
}

// scheduleSync checks schedule.lua's 'sync' answer for the schedule name
// and returns it as a list.
func scheduleSync(name string, v any) ([]any, error) {
	l, ok := v.([]any)
	if ok && len(l) == 2 && l[0] == claimMissing {
		return nil, fmt.Errorf("%w: %q", ErrNoSchedule, name)
	}
	if !ok || len(l) < 6 || l[0] != Claimed {
		return nil, fmt.Errorf("%w: schedule sync answered %v", ErrMalformed, v)
	}
	return l, nil
}

// scheduleClaim maps schedule.lua's 'claim' answer for the schedule name.
func scheduleClaim(name string, v any) (string, error) {
	switch v {
	case Claimed, ClaimMoved, ClaimPaused:
		return v.(string), nil
	case claimMissing:
		return "", fmt.Errorf("%w: %q", ErrNoSchedule, name)
	}
	return "", fmt.Errorf("%w: schedule claim answered %v", ErrMalformed, v)
}

// scheduleDone maps schedule.lua's answer to op, which is statusOK or
// statusMissing.
func scheduleDone(name, op string, v any) error {
	switch {
	case v == claimMissing:
		return fmt.Errorf("%w: %q", ErrNoSchedule, name)
	case v != Claimed:
		return fmt.Errorf("%w: schedule %s answered %v", ErrMalformed, op, v)
	}
	return nil
}

// scheduleDeleted maps schedule.lua's 'delete' answer for the schedule
// name: statusOK, statusMissing, or {statusRunning, the ms of seen, or an
// empty string, or seen as it is when it is no time}.
func scheduleDeleted(name string, v any) error {
	if l, ok := v.([]any); ok && len(l) == 2 && l[0] == statusRunning {
		if raw, isText := l[1].(string); isText && raw != "" {
			return fmt.Errorf("%w: schedule %q records its latest sync as %q, no time (written by hand), so whether a "+
				"scheduler still runs it cannot be told: remove it from every scheduler's code first, then force the delete "+
				"(a scheduler that still runs it records its next sync over it); nothing was deleted", ErrScheduleRunning, name, raw)
		}
		if at, isTime := l[1].(int64); isTime {
			return fmt.Errorf("%w: schedule %q was synced by a scheduler at %s (store time), less than %s ago: "+
				"remove it from every scheduler's code and deploy that, wait %s, then delete it again (or force it: "+
				"a scheduler that still runs it starts it afresh at its next round); nothing was deleted",
				ErrScheduleRunning, name, time.UnixMilli(at).UTC().Format(time.RFC3339), ScheduleRunningWithin, ScheduleRunningWithin)
		}
		return fmt.Errorf("%w: schedule %q was never synced by a scheduler of this release, so whether one of an "+
			"older release still runs it cannot be told: remove it from every scheduler's code first, then force "+
			"the delete; nothing was deleted", ErrScheduleRunning, name)
	}
	return scheduleDone(name, "delete", v)
}
