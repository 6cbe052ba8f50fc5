package store

import "github.com/sluicehq/sluice/sluicetype"

// ErrWrongState: the job is not in a state the operator's call takes (a
// running job cannot be deleted, a finished one cannot be cancelled, only
// archived and cancelled jobs are redriven, only quarantined ones
// released). The error is a *sluicetype.StateError; status.go maps the
// operator scripts' statuses to it.
var ErrWrongState = sluicetype.ErrWrongState
