package store

import "errors"

// ErrWrongState: the job is not in a state the operator's call takes (a
// running job cannot be deleted, a finished one cannot be cancelled, only
// archived and cancelled jobs are redriven, only quarantined ones
// released). The error is a *StateError.
var ErrWrongState = errors.New("sluice: the job's state does not allow this")

// StateError says which job was in which state when an operator's call
// refused it. It matches ErrWrongState with errors.Is.
type StateError struct {
	ID    string // the job (its local ID in store results; flow sets the full ID)
	Op    string // cancel, delete, redrive, release
	State string
}

func (e *StateError) Error() string {
	return "sluice: cannot " + e.Op + " job " + e.ID + ": it is " + e.State
}

// Is makes errors.Is(err, ErrWrongState) true.
func (e *StateError) Is(target error) bool { return target == ErrWrongState }

// Statuses of the operator scripts, mapped here and nowhere else.
const (
	adminOK      = "ok"
	adminMissing = "missing"
)

// adminStatus maps an operator script's { status, state } answer for the
// job local to its previous state or an error.
func adminStatus(op, local, status, state string) (string, error) {
	switch status {
	case adminOK:
		return state, nil
	case adminMissing:
		return "", ErrNotFound
	}
	return "", &StateError{ID: local, Op: op, State: state}
}
