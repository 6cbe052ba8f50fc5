package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrWorkerNotFound: Reroute with no fallback (sticky.Wait) named a worker
// that is not live; the error names it.
var ErrWorkerNotFound = sluicetype.ErrWorkerNotFound

// Reroute changes the worker job id prefers (sticky routing): to is a
// sticky.To option, or nil to unpin the job. An available job moves to its
// new worker at once; a running one keeps its attempt and goes to its new
// worker when it is next ready (retry, snooze, redrive). A completed job,
// which never runs again, is refused with a *StateError (ErrWrongState).
// A route with no fallback (sticky.Wait) to a worker that is not live, or
// that does not serve the job's queue (it never did, or the queue was
// resized since the worker started, even back to the same count), is
// refused with ErrWorkerNotFound: the job would wait for it for ever.
func (c *Client) Reroute(ctx context.Context, id string, to flow.EnqueueOption) error {
	return c.reroute(ctx, id, to, store.Created{})
}

// RerouteOf reroutes as Reroute does only if job id is the one created
// at or after from and before before, checked in the same script call:
// a job given the ID since a tool showed the job is not rerouted. Another
// job is an *OtherJobError (ErrWrongState), nothing written; other
// errors as CancelJobOf's.
func (c *Client) RerouteOf(ctx context.Context, id string, to flow.EnqueueOption, from, before time.Time) error {
	cr, err := created(from, before, nil)
	if err != nil {
		return err
	}
	return c.reroute(ctx, id, to, cr)
}

func (c *Client) reroute(ctx context.Context, id string, to flow.EnqueueOption, cr store.Created) error {
	ref, err := c.ref(id)
	if err != nil {
		return err
	}
	var s store.Sticky
	if to != nil {
		var ok bool
		if s, ok, err = c.b.Sticky(to); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: Reroute takes a sticky routing option (sticky.To) or nil", flow.ErrInvalid)
		}
	}
	if s.Mode == "w" {
		w, live, err := c.b.Store.Worker(ctx, s.Worker)
		if err != nil {
			return err
		}
		if !live {
			return fmt.Errorf("%w: %q is not live (a route to a worker that is not running yet needs a fallback: sticky.After or sticky.FailAfter)", ErrWorkerNotFound, s.Worker)
		}
		q := ref.Partition.Queue
		if w.Queues[q] == 0 {
			return fmt.Errorf("%w: %q does not serve queue %q, so it would never claim the job (a route to it needs a fallback: sticky.After or sticky.FailAfter)",
				ErrWorkerNotFound, s.Worker, q)
		}
		// a worker started on another layout than the registry's stops
		// claiming from the queue (it was resized since: restart it),
		// though its heartbeat says so only at its next beat; a resize
		// back to the same count is told by the layout's version
		lay, err := c.layout(ctx, q)
		if err != nil {
			return err
		}
		if v, ok := w.QueueVersions[q]; ok && v != lay.Version {
			return fmt.Errorf("%w: %q serves queue %q by its layout version %d, and the queue was resized since (now version %d, %d partitions): "+
				"it no longer claims from it until restarted (a route to it needs a fallback: sticky.After or sticky.FailAfter)",
				ErrWorkerNotFound, s.Worker, q, v, lay.Version, lay.Partitions)
		}
		if w.Queues[q] != lay.Partitions {
			return fmt.Errorf("%w: %q serves queue %q as %d partitions, which the queue was resized from (now %d): it no longer claims from it until restarted "+
				"(a route to it needs a fallback: sticky.After or sticky.FailAfter)", ErrWorkerNotFound, s.Worker, q, w.Queues[q], lay.Partitions)
		}
	}
	_, err = c.b.Store.RerouteOf(ctx, ref, s, cr)
	return stateError(id, err)
}
