package store

import "github.com/sluicehq/sluice/sluicetype"

// ErrWrongState: the job is not in a state the operator's call takes (a
// running job cannot be deleted, a finished one cannot be cancelled, only
// archived and cancelled jobs are redriven, only quarantined ones
// released). The error is a *sluicetype.StateError.
var ErrWrongState = sluicetype.ErrWrongState

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
	return "", &sluicetype.StateError{ID: local, Op: op, State: state}
}
