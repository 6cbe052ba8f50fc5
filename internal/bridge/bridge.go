// Package bridge hands flow/admin what it needs of a flow.Client (its
// store, namespace, queue layout, and how it reads an enqueue
// option) without flow exporting any of it: flow fills in FromFlow when it
// is initialised, and admin, which imports flow, calls it.
package bridge

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// Client is a flow.Client's configuration, as the operator calls use it.
type Client struct {
	Store *store.Store
	// RetainCancelled is how long an operator's cancel keeps the job
	// (flow.ClientOptions.RetainCancelled); 0: as long as the workers of
	// its queue recorded (store.ReadRetention).
	RetainCancelled time.Duration
	Namespace       string
	// Partitions names every partition of a queue, as the registry records
	// them now (sluicetype.ErrQueueNotFound when it has no such queue).
	Partitions func(ctx context.Context, queue string) ([]keys.Partition, error)
	// Layouts is the client's view of the queue layouts.
	Layouts *store.Layouts
	// Sticky reads the sticky routing an enqueue option (a
	// flow.EnqueueOption) sets; ok is false when it sets none.
	Sticky func(opt any) (s store.Sticky, ok bool, err error)
	// NextRun is the next tick of schedule r after now; zero if its
	// timing cannot be read.
	NextRun func(r store.ScheduleRecord, now time.Time) time.Time
	// Enqueue adds job to lay's queue, in the partition Client.Enqueue
	// would choose under lay for routing key route ("": by the job's ID),
	// and answers a flow.Enqueued. A job whose ID the caller chose (not
	// Generated) goes to the partition where a job with its ID was added
	// before, if any (under an earlier layout: a repeat is then answered
	// there), and one found on a partition a shrink retired is answered
	// a duplicate. It reads no layout and registers none: the caller read
	// lay (an operator call: Layouts.Lookup, on every call).
	Enqueue func(ctx context.Context, lay store.Layout, route string, job store.NewJob) (any, error)
	// Signal is flow.Client.Signal with opts (a []flow.SignalOption), and
	// says whether the signal was a duplicate of one sent with its key.
	Signal func(ctx context.Context, id, name string, payload any, opts any) (duplicate bool, err error)
	// SignalCreatedIn is the flow.SignalOption that sends a signal only to
	// the job created at or after from and before before.
	SignalCreatedIn func(from, before time.Time) any
}

// FromFlow returns the configuration of c, a *flow.Client. Set by flow.
var FromFlow func(c any) Client
