// Package outcome classifies what a handler returned: the control-flow
// errors of package sluicetype (SnoozeError, SkipError, ...), which flow
// exposes to users and the runtime maps to ack codes, and Park, the
// runtime's own.
package outcome

// Park archives a job that cannot run as it is (unknown kind, undecodable
// payload). Reason is the archive reason operators see.
type Park struct {
	Reason string
	Err    error
}

func (e *Park) Error() string { return e.Reason + ": " + e.Err.Error() }

func (e *Park) Unwrap() error { return e.Err }
