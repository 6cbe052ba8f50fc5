package flow

import (
	"cmp"
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/bridge"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

func init() { bridge.FromFlow = func(c any) bridge.Client { return c.(*Client).bridge() } }

// bridge is the client's configuration for flow/admin.
func (c *Client) bridge() bridge.Client {
	return bridge.Client{
		Store:           c.st,
		RetainCancelled: c.opts.RetainCancelled,
		Namespace:       c.opts.Namespace,
		Partitions:      c.partitions,
		Layouts:         c.plan.layouts,
		Sticky: func(opt any) (store.Sticky, bool, error) {
			var o enqueueOptions
			if err := opt.(EnqueueOption)(&o); err != nil {
				return store.Sticky{}, false, err
			}
			return o.sticky, o.sticky.Worker != "", nil
		},
		Signal: func(ctx context.Context, id, name string, payload any, opts any) (bool, error) {
			o, _ := opts.([]SignalOption)
			return c.signal(ctx, id, name, payload, o...)
		},
		SignalCreatedIn: func(from, before time.Time) any { return signalCreatedIn(from, before) },
		NextRun: func(r store.ScheduleRecord, now time.Time) time.Time {
			tm, _, err := parseTiming(r.Cron, r.Every, r.TimeZone)
			if err != nil {
				return time.Time{}
			}
			if r.Last.After(now) {
				now = r.Last
			}
			return tm.next(now)
		},
		Enqueue: func(ctx context.Context, lay store.Layout, route string, job store.NewJob) (any, error) {
			ref := c.plan.in(lay, cmp.Or(route, job.Local), job.Local, nil)
			if !job.Generated {
				// an ID the caller chose, so that the same call made again
				// adds nothing: one added under an earlier layout may be on
				// another partition than this count chooses
				at, found, err := c.enqueuedBefore(ctx, lay, job.Local)
				if err != nil {
					return Enqueued{ID: ref.String()}, err
				}
				if found && at.Index >= lay.Partitions {
					// on a partition a shrink retired, which takes no job:
					// kept as added, as a spawn keeps its children there
					return Enqueued{ID: keys.Ref{Partition: at, Local: job.Local}.String(), Duplicate: true}, nil
				}
				if found {
					ref.Partition = at // answered there: a repeat, or a conflict
				}
			}
			res, err := c.plan.enqueue(ctx, ref.Partition, lay.Partitions, []store.NewJob{job})
			if err != nil {
				// the ID it was sent under, as Enqueue gives: Redis may
				// have added it and lost the reply
				return Enqueued{ID: ref.String()}, err
			}
			e := enqueued(ref, res[0])
			return e, e.Err
		},
	}
}

// enqueuedBefore says on which partition of lay's queue a job with the
// local ID local was added, if any: those of lay, then those an earlier
// layout named (retired by a shrink since, or not).
func (c *Client) enqueuedBefore(ctx context.Context, lay store.Layout, local string) (keys.Partition, bool, error) {
	parts := lay.Parts(c.opts.Namespace)
	former, _, err := c.st.PartitionsBeyond(ctx, c.opts.Namespace, lay.Queue, lay.Partitions)
	if err != nil {
		return keys.Partition{}, false, err
	}
	found, err := c.st.EnqueuedIn(ctx, append(parts, former...), []string{local})
	if err != nil {
		return keys.Partition{}, false, err
	}
	p, ok := found[local]
	return p, ok, nil
}

// partitions names every partition of queue, as the registry records
// them now (read on every call: operators must see a resize at once).
func (c *Client) partitions(ctx context.Context, queue string) ([]keys.Partition, error) {
	lay, err := c.plan.layouts.Lookup(ctx, queue)
	if err != nil {
		return nil, err
	}
	return lay.Parts(c.opts.Namespace), nil
}

// placing names every partition of queue as the registry records them
// now, and has the client place new jobs of queue by that count, even in
// a process configured with a count a resize since changed
// (store.Layouts.Refresh): a scheduler's ticks go where every other
// scheduler places them.
func (c *Client) placing(ctx context.Context, queue string) ([]keys.Partition, error) {
	lay, err := c.plan.layouts.Refresh(ctx, queue)
	if err != nil {
		return nil, err
	}
	return lay.Parts(c.opts.Namespace), nil
}
