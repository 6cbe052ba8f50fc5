package admin

import (
	"context"

	"github.com/sluicehq/sluice/sluicetype"
)

// Workers lists the live workers of the client's namespace (at most 1,000),
// most recently seen first, in one pipelined round trip.
func (c *Client) Workers(ctx context.Context) ([]sluicetype.WorkerInfo, error) {
	return c.b.Store.Workers(ctx)
}
