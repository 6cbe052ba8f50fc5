package main

import (
	"context"
	"errors"
	"sort"

	"github.com/sluicehq/sluice/flow/admin"
)

// errNoQueue: the queue named does not exist in the namespace (exit 3).
var errNoQueue = errors.New("sluice: queue not found")

// knownQueues are the queues of --partitions and of the live workers.
func (c *cli) knownQueues(ctx context.Context, client *admin.Client) ([]string, error) {
	seen := map[string]bool{}
	for q := range c.partitions {
		seen[q] = true
	}
	ws, err := client.Workers(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		for q := range w.Queues {
			seen[q] = true
		}
	}
	out := make([]string, 0, len(seen))
	for q := range seen {
		out = append(out, q)
	}
	sort.Strings(out)
	return out, nil
}

// checkQueue returns a not-found error for a queue the namespace does not
// know: no live worker serves it, --partitions does not name it, and it
// has no job, no finished job in the last two hours and no paused
// partition. (--partitions Q=N names a queue that has none of these yet,
// to pause it before its workers start.)
func (c *cli) checkQueue(ctx context.Context, client *admin.Client, queue string) error {
	known, err := c.knownQueues(ctx, client)
	if err != nil {
		return err
	}
	for _, q := range known {
		if q == queue {
			return nil
		}
	}
	st, err := client.QueueStats(ctx, queue, admin.MaxStatsWindow)
	if err != nil {
		return c.about("queue", queue, err)
	}
	if st.Paused > 0 {
		return nil
	}
	for _, m := range []map[string]int64{st.Depth, st.Finished} {
		for _, n := range m {
			if n > 0 {
				return nil
			}
		}
	}
	err = c.about("queue", queue, errNoQueue)
	err.(*subjectError).hint = "no live worker serves it and it holds no jobs; --partitions " + queue + "=N names a new one"
	return err
}
