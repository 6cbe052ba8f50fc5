package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/runtime"
)

// knownQueues are the queues registered in the namespace, by name. A
// queue whose registry entry is not a layout is left out, and named in
// the error returned with the others (listed); any other error comes
// with no queue.
func (c *cli) knownQueues(ctx context.Context, client *admin.Client) ([]string, error) {
	qs, err := client.Layouts(ctx)
	if !listed(err) {
		return nil, err
	}
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out, err
}

// checkQueue returns a not-found error naming queue and the namespace when
// no client or worker has registered it, and the error of its registry
// entry when that is not a layout (another queue's corrupt entry is no
// concern of a command about this one).
func (c *cli) checkQueue(ctx context.Context, client *admin.Client, queue string) error {
	if !runtime.ValidQueue(queue) {
		return c.about("queue", queue, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue))
	}
	known, err := c.knownQueues(ctx, client)
	bad, only := admin.Unreadable(err)
	switch {
	case !only:
		return err
	case bad[queue] != nil:
		return c.about("queue", queue, bad[queue])
	case slices.Contains(known, queue):
		return nil
	}
	err = c.about("queue", queue, admin.ErrQueueNotFound)
	err.(*subjectError).hint = "no client or worker has used it; sluice queues list shows those that exist"
	return err
}
