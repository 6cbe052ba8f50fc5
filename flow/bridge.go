package flow

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/bridge"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

func init() { bridge.FromFlow = func(c any) bridge.Client { return c.(*Client).bridge() } }

// bridge is the client's configuration for flow/admin.
func (c *Client) bridge() bridge.Client {
	cfg := store.Config{NS: c.opts.Namespace, RetainCancelled: c.opts.RetainCancelled, RetainArchived: 7 * 24 * time.Hour}
	if c.opts.Clock != nil {
		cfg.Now = c.opts.Clock.Now
	}
	return bridge.Client{
		Store:      c.st,
		Admin:      store.New(c.st.Client(), cfg),
		Namespace:  c.opts.Namespace,
		Partitions: c.partitions,
		Now:        c.now,
		Sticky: func(opt any) (store.Sticky, bool, error) {
			var o enqueueOptions
			if err := opt.(EnqueueOption)(&o); err != nil {
				return store.Sticky{}, false, err
			}
			return o.sticky, o.sticky.Worker != "", nil
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
		Enqueue: func(ctx context.Context, queue string, job store.NewJob) (any, error) {
			ref := keys.Ref{Partition: c.st.Partition(queue, c.plan.partition(queue, job.Local, nil)), Local: job.Local}
			res, err := c.st.Enqueue(ctx, ref.Partition, []store.NewJob{job})
			if err != nil {
				return Enqueued{}, err
			}
			e := enqueued(ref, res[0])
			return e, e.Err
		},
	}
}

// partitions names every partition of queue (ClientOptions.Partitions).
func (c *Client) partitions(queue string) []keys.Partition {
	n := max(c.opts.Partitions[queue], 1)
	ps := make([]keys.Partition, n)
	for i := range ps {
		ps[i] = c.st.Partition(queue, i)
	}
	return ps
}

func (c *Client) now() time.Time {
	if c.opts.Clock != nil {
		return c.opts.Clock.Now()
	}
	return time.Now()
}
