package main

import (
	"context"
	"errors"
	"fmt"

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
// entry when that is not a layout. It reads that entry alone: another
// queue's corrupt entry is no concern of a command about this one, and a
// listing of the queues stops at admin.MaxQueuesListed.
func (c *cli) checkQueue(ctx context.Context, client *admin.Client, queue string) error {
	_, err := c.queueLayout(ctx, client, queue)
	return err
}

// queueLayout is checkQueue that returns the queue's layout.
func (c *cli) queueLayout(ctx context.Context, client *admin.Client, queue string) (admin.QueueInfo, error) {
	if !runtime.ValidQueue(queue) {
		return admin.QueueInfo{}, c.about("queue", queue, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue))
	}
	l, err := client.QueueLayout(ctx, queue)
	return l, c.queueError(queue, err, "no client or worker has used it; sluice queues list shows those that exist")
}

// queueError is the error of a command about queue whose layout read
// failed with err (nil for none): not found, with hint; its entry not a
// layout; or err as it is.
func (c *cli) queueError(queue string, err error, hint string) error {
	if errors.Is(err, admin.ErrQueueNotFound) {
		err := c.about("queue", queue, admin.ErrQueueNotFound)
		err.(*subjectError).hint = hint
		return err
	}
	if bad, only := admin.Unreadable(err); only && bad[queue] != nil {
		return c.about("queue", queue, bad[queue])
	}
	return err
}
