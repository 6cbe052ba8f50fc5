package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/runtime"
)

// knownQueues are the queues registered in the namespace, by name.
func (c *cli) knownQueues(ctx context.Context, client *admin.Client) ([]string, error) {
	qs, err := client.Queues(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out, nil
}

// checkQueue returns a not-found error naming queue and the namespace when
// no client or worker has registered it.
func (c *cli) checkQueue(ctx context.Context, client *admin.Client, queue string) error {
	if !runtime.ValidQueue(queue) {
		return c.about("queue", queue, fmt.Errorf("%w: queue %q", flow.ErrInvalid, queue))
	}
	known, err := c.knownQueues(ctx, client)
	if err != nil {
		return err
	}
	if slices.Contains(known, queue) {
		return nil
	}
	err = c.about("queue", queue, admin.ErrQueueNotFound)
	err.(*subjectError).hint = "no client or worker has used it; sluice queues list shows those that exist"
	return err
}
