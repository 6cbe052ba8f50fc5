package sluicetype

import (
	"errors"
	"fmt"
)

// Errors of the queue layout registry (the partition count of each queue,
// recorded in Redis when the queue is first used); match them with
// errors.Is.
var (
	// ErrQueueNotFound: no queue of this name is registered in the
	// namespace (no client, worker or scheduler of this version has used
	// it). The error names the queue.
	ErrQueueNotFound = errors.New("sluice: queue not found")
	// ErrLayoutMismatch: a process is configured with another partition
	// count for a queue than the one recorded in Redis. The error is a
	// *LayoutMismatchError.
	ErrLayoutMismatch = errors.New("sluice: queue layout mismatch")
	// ErrResizeRefused: a queue cannot be resized as it is (not paused, or
	// jobs left in partitions that would go away); nothing was changed.
	// The error says why.
	ErrResizeRefused = errors.New("sluice: queue resize refused")
)

// LayoutMismatchError says which queue a process was configured for with
// another partition count than Redis records. errors.Is(err,
// ErrLayoutMismatch) matches it.
type LayoutMismatchError struct {
	Namespace  string
	Queue      string
	Configured int // the process's option (runtime.Options.Partitions, flow.ClientOptions.Partitions)
	Recorded   int // the registry's count
}

func (e *LayoutMismatchError) Error() string {
	return fmt.Sprintf("sluice: queue %q of namespace %q has %d partitions in Redis, this process is configured with %d: "+
		"drop the setting, set it to %d, or resize the queue (admin.Client.ResizeQueue)",
		e.Queue, e.Namespace, e.Recorded, e.Configured, e.Recorded)
}

// Is makes errors.Is(err, ErrLayoutMismatch) true.
func (e *LayoutMismatchError) Is(target error) bool { return target == ErrLayoutMismatch }
