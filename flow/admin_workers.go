package flow

import (
	"context"

	"github.com/sluicehq/sluice/internal/store"
)

// WorkerInfo is a live worker as the registry knows it: its ID (the lease
// holder name jobs show), host and process, the queues it serves with
// their partitions, its concurrency, the IDs of the jobs it runs, when it
// started and when it last sent a heartbeat.
//
// Every worker writes its entry when it starts and on every lease-renewal
// tick, and removes it when it stops. An entry that has had no heartbeat
// for three times the worker's longest lease expires: the worker is
// considered dead and is pruned.
type WorkerInfo = store.WorkerInfo

// Workers lists the live workers of the client's namespace (at most 1,000),
// most recently seen first, in one pipelined round trip.
func (c *Client) Workers(ctx context.Context) ([]WorkerInfo, error) {
	return c.st.Workers(ctx)
}
