// Package sluicetype holds the types that Sluice's public packages share:
// what an operator reads of a job (ErrorRecord, Orphan, Tracking,
// StuckInfo), a live worker (WorkerInfo), a committed write (Effect) and a
// dead-lettered one (DeadEffect), the control-flow errors a handler
// returns to decide its job's fate (SnoozeError, SkipError, ...) and the
// errors the others match with errors.Is (ErrNotFound, ErrStale, ...).
//
// It imports nothing else of Sluice's, so any package, yours included, can
// name these types without pulling in a worker or a client. The packages
// users call (flow, flow/admin, step, idempotency, runtime) return and take
// them; most code never imports this package directly except to match an
// error or name a field's type.
package sluicetype
