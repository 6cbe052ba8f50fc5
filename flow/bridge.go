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
