package admin

import (
	"errors"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Errors of the operator calls (admin_*.go); match them with errors.Is.
var (
	// ErrWrongState: the job's state does not allow the call (deleting a
	// running job, cancelling a finished one, redriving a job that is not
	// archived or cancelled, releasing one that is not quarantined). The
	// error is a *StateError naming the job and its state.
	ErrWrongState = sluicetype.ErrWrongState
	// ErrTooMany: more job IDs than one call takes (MaxRedriveIDs).
	ErrTooMany = errors.New("sluice: too many job IDs in one call")
	// ErrScheduleOutdated: TriggerSchedule was refused because the
	// schedule's job template was published by a scheduler of an older
	// release, which did not record how its ticks are placed on the
	// queue's partitions (by a partition key, unique key or quarantine
	// hold), and the queue has more than one: a trigger placed otherwise
	// could run beside the job holding the unique key, or out of its
	// partition key's order. Nothing was enqueued. Run the schedule's
	// Scheduler on this release (it publishes the template when it
	// starts), then trigger again.
	ErrScheduleOutdated = errors.New("sluice: the schedule's job template predates placement routing")
	// ErrScheduleRunning: DeleteSchedule was refused because a scheduler
	// still runs the schedule (it synced it less than
	// ScheduleRunningWithin ago), or because no scheduler of this release
	// ever synced it and one of an older release may. Nothing was deleted.
	// Remove the schedule from every scheduler's code and deploy that,
	// then delete it once ScheduleRunningWithin has passed, or force it
	// (DeleteScheduleOptions.Force).
	ErrScheduleRunning = store.ErrScheduleRunning
)

// ScheduleRunningWithin is how recently a scheduler must have synced a
// schedule (store time) for DeleteSchedule to refuse it as still run.
const ScheduleRunningWithin = store.ScheduleRunningWithin

// stateError fills in the job's full ID in a *StateError from the store.
func stateError(id string, err error) error {
	var se *sluicetype.StateError
	if errors.As(err, &se) {
		se.ID = id
	}
	return err
}

// Unreadable returns, by name, the entries a listing (Queues, Layouts,
// Schedules, ReadableSchedules, Workers) left out because their data in
// Redis cannot be read, each with its error (ErrMalformed, naming the
// entry), and whether err is nothing else (true for nil). When it is
// not, the listing failed as a whole and returned no entry; when it is,
// the listing returned every entry it could read.
func Unreadable(err error) (map[string]error, bool) {
	es, only := store.EntryErrors(err)
	if !only {
		return nil, false
	}
	bad := make(map[string]error, len(es))
	for _, e := range es {
		bad[e.Name] = e.Err
	}
	return bad, true
}
