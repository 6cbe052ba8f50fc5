package outcome

// Crash counts the attempt as a crash (crash_attempt+1, quarantined at the
// crash limit) rather than as a returned error, like a panic: for a
// handler that lost the code it ran, such as an isolated child process
// that died by a signal or exited without a valid reply.
type Crash struct {
	Reason  string // the error class recorded, e.g. "child_crash"
	Message string
	Detail  []byte // recorded like a panic's stack, e.g. the child's stderr tail
}

func (e *Crash) Error() string { return e.Message }
