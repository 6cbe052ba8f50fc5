package admin

import (
	"context"

	"github.com/sluicehq/sluice/sluicetype"
)

// Workers lists the live workers of the client's namespace (at most 1,000),
// most recently seen first, in one pipelined round trip. A worker whose
// record is corrupt is left out, and named in the error returned with the
// others (Unreadable reads it; ErrMalformed).
func (c *Client) Workers(ctx context.Context) ([]sluicetype.WorkerInfo, error) {
	return c.b.Store.Workers(ctx)
}
