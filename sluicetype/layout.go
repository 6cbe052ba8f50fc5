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
	// Resized: the process was not configured with a count but used the
	// one it read from Redis (Configured), and the queue has shrunk since:
	// nothing was added to the partition that went away. The process now
	// uses the new count, so the call may simply be made again.
	Resized bool
}

func (e *LayoutMismatchError) Error() string {
	if e.Resized {
		return fmt.Sprintf("sluice: queue %q of namespace %q was resized to %d partitions while this process used %d: "+
			"nothing was added to the partition that went away; enqueue again (the process now uses %d)",
			e.Queue, e.Namespace, e.Recorded, e.Configured, e.Recorded)
	}
	return fmt.Sprintf("sluice: queue %q of namespace %q has %d partitions in Redis, this process is configured with %d: "+
		"drop the setting, set it to %d, or resize the queue (admin.Client.ResizeQueue)",
		e.Queue, e.Namespace, e.Recorded, e.Configured, e.Recorded)
}

// Is makes errors.Is(err, ErrLayoutMismatch) true.
func (e *LayoutMismatchError) Is(target error) bool { return target == ErrLayoutMismatch }
