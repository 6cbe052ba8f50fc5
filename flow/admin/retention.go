package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// Retention is how long the workers of a queue keep the jobs that finish
// there before their retention sweep deletes them (runtime.Options
// RetainCompleted or DiscardCompleted, RetainArchived, RetainCancelled),
// as recorded in Redis by the worker of the queue that started last (a
// worker writes it when it starts, or, if that write failed, at a later
// maintenance pass, which replaces no record of a worker that started
// since): the newest configuration is the one a deploy brings. Workers
// that serve one queue with different settings each finish jobs with
// their own; an operator's cancel follows the record.
type Retention struct {
	Completed time.Duration // < 0: deleted at once (DiscardCompleted)
	Archived  time.Duration // archived and quarantined jobs
	Cancelled time.Duration
	// Recorded is false when no worker recorded the queue's retention
	// (none has served it yet, or only workers of a version that did not
	// record it): the durations are then the workers' defaults
	// (runtime.DefaultRetainCompleted, DefaultRetainArchived,
	// DefaultRetainCancelled), which a worker may not have.
	Recorded bool
	Worker   string    // the worker that recorded it
	Started  time.Time // when that worker started, on Redis's clock
}

// Retention reads the retention the workers of queue recorded, in one
// round trip (two when none is recorded). Errors: ErrInvalid for a bad
// queue name, ErrQueueNotFound for a queue that does not exist, and one
// wrapping ErrMalformed when what Redis holds is not a retention.
func (c *Client) Retention(ctx context.Context, queue string) (Retention, error) {
	if !runtime.ValidQueue(queue) {
		return Retention{}, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue)
	}
	r, ok, err := c.b.Store.ReadRetention(ctx, queue)
	if err != nil {
		return Retention{}, err
	}
	if !ok {
		// nothing recorded: a queue no worker served yet, or no queue at
		// all (a misspelt name), which must not read as the defaults
		if _, err := c.b.Partitions(ctx, queue); err != nil {
			return Retention{}, err
		}
		return Retention{Completed: runtime.DefaultRetainCompleted, Archived: runtime.DefaultRetainArchived,
			Cancelled: runtime.DefaultRetainCancelled}, nil
	}
	return Retention{Completed: r.Completed, Archived: r.Archived, Cancelled: r.Cancelled,
		Recorded: true, Worker: r.Worker, Started: r.Started}, nil
}

// KeptBy says where the retention of a job an operator cancelled comes
// from.
type KeptBy string

const (
	// KeptByOption: flow.ClientOptions.RetainCancelled (the CLI's
	// --retain) set it.
	KeptByOption KeptBy = "option"
	// KeptByWorkers: the retention the workers of the job's queue
	// recorded (Retention).
	KeptByWorkers KeptBy = "workers"
	// KeptByDefault: nothing set it and no worker recorded the queue's:
	// flow.DefaultRetainCancelled, which the workers may not have.
	KeptByDefault KeptBy = "default"
)

// Cancelled is what CancelJob did.
type Cancelled struct {
	// Previous is the job's state before it was cancelled.
	Previous string
	// Kept is how long the cancelled job is kept before the workers'
	// retention sweep deletes it, and By where that comes from.
	Kept time.Duration
	By   KeptBy
	// Worker is the worker whose recorded retention Kept is (By
	// KeptByWorkers).
	Worker string
}

// cancelRetention is how long a job of queue that an operator cancels
// is kept: the client's option, else what the queue's workers recorded,
// else the default.
func (c *Client) cancelRetention(ctx context.Context, queue string) (Cancelled, error) {
	if c.b.RetainCancelled > 0 {
		return Cancelled{Kept: c.b.RetainCancelled, By: KeptByOption}, nil
	}
	r, err := c.Retention(ctx, queue)
	if err != nil {
		return Cancelled{}, fmt.Errorf("%w (nothing was cancelled; give the retention explicitly: "+
			"flow.ClientOptions.RetainCancelled, sluice jobs cancel --retain)", err)
	}
	if !r.Recorded {
		return Cancelled{Kept: r.Cancelled, By: KeptByDefault}, nil
	}
	return Cancelled{Kept: r.Cancelled, By: KeptByWorkers, Worker: r.Worker}, nil
}
