// Package admin is the operator's API of Sluice: list and inspect jobs,
// cancel, delete, redrive, release and reroute them, pause and resume
// queues, read queue stats and the live workers, manage schedules and
// dead-lettered effects. The sluice CLI is built on it; producers and
// handlers use package flow instead.
//
//	c, _ := flow.NewClient(rdb, flow.ClientOptions{})
//	ops := admin.New(c)
//	page, err := ops.ListJobs(ctx, admin.ListOptions{Queue: "email", State: flow.StateArchived})
//
// Every call reads or writes Redis only (no worker needs to run), through
// the same scripts the workers use, so an operator's change is atomic with
// respect to running attempts: a cancelled job's attempt can no longer
// write anything.
package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/bridge"
	"github.com/sluicehq/sluice/internal/keys"
)

// Client makes operator calls with a flow.Client's connection and
// configuration (namespace, clock, retention of cancelled jobs). A call
// that names a queue reads its layout from Redis (see Queues). It is safe
// for concurrent use.
type Client struct {
	c *flow.Client
	b bridge.Client
}

// New returns an operator client on c's connection and configuration.
func New(c *flow.Client) *Client {
	return &Client{c: c, b: bridge.FromFlow(c)}
}

// Namespace is the namespace the client reads and writes.
func (c *Client) Namespace() string { return c.b.Namespace }

// StoreTime reads the store's time (Redis TIME; the flow.Client's Clock
// when it has one), in one round trip: the "now" to set against the times
// Sluice keeps (a job's finish, a worker's heartbeat), which are Redis's,
// where the caller's clock may be minutes off.
func (c *Client) StoreTime(ctx context.Context) (time.Time, error) {
	return c.b.Store.Time(ctx)
}

// Job reads one job by ID, with its errors, steps and history, in one
// round trip (flow.Client.Job).
func (c *Client) Job(ctx context.Context, id string) (*flow.JobInfo, error) {
	return c.c.Job(ctx, id)
}

// ref parses a job ID of the client's namespace.
func (c *Client) ref(id string) (keys.Ref, error) {
	ref, ok := keys.ParseRef(c.b.Namespace, id)
	if !ok {
		return ref, fmt.Errorf("%w: job ID %q is not of the form queue:partition:id", flow.ErrInvalid, id)
	}
	return ref, nil
}
