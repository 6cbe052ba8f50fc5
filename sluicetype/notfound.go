package sluicetype

import "errors"

// notFound are the sentinels that say the job, schedule, dead effect (or
// other thing a call names) does not exist. A new not-found sentinel is
// added here, so that IsNotFound, and the sluice command's exit code 3,
// know it.
var notFound = []error{
	ErrNotFound,
	ErrScheduleNotFound,
	ErrNoDeadEffect,
	ErrQueueNotFound,
	ErrWorkerNotFound,
	ErrSignalNotFound,
}

// ErrWorkerNotFound: no live worker (one whose heartbeat has not expired)
// has the worker ID a call names.
var ErrWorkerNotFound = errors.New("sluice: worker not found")

// ErrSignalNotFound: a job keeps no signal, sent and not yet taken, of
// the name a call gives (admin.Client.DiscardSignal).
var ErrSignalNotFound = errors.New("sluice: signal not found")

// IsNotFound reports whether err says that what a call names does not
// exist: errors.Is(err, s) for one of the not-found sentinels
// (ErrNotFound, ErrScheduleNotFound, ErrNoDeadEffect, ErrQueueNotFound,
// ErrWorkerNotFound, ErrSignalNotFound).
func IsNotFound(err error) bool {
	for _, s := range notFound {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
