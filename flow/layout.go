package flow

import "github.com/sluicehq/sluice/sluicetype"

// Errors of the queue layout registry (see ClientOptions.Partitions);
// match them with errors.Is.
var (
	// ErrLayoutMismatch: ClientOptions.Partitions gives a queue another
	// partition count than Redis records; the error is a
	// *sluicetype.LayoutMismatchError naming the queue and both counts.
	ErrLayoutMismatch = sluicetype.ErrLayoutMismatch
	// ErrQueueNotFound: no queue of this name is registered.
	ErrQueueNotFound = sluicetype.ErrQueueNotFound
)
