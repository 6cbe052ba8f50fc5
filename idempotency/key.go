package idempotency

import (
	"context"

	"github.com/sluicehq/sluice/internal/attempt"
)

// Key returns an idempotency key for an external call made by step: the
// same in every attempt of this job (job ID and step name), different for
// every other job or step. It returns "" outside a running job.
func Key(ctx context.Context, step string) string {
	st, ok := attempt.From(ctx)
	if !ok {
		return ""
	}
	return st.Store.NS() + ":" + st.Ref.String() + ":" + step
}

// JobKey returns a Redis key in the running job's cluster slot (its hash
// tag followed by name): effects on it apply in the same script as the
// step's checkpoint rather than through the outbox. It returns "" outside
// a running job.
func JobKey(ctx context.Context, name string) string {
	st, ok := attempt.From(ctx)
	if !ok {
		return ""
	}
	return st.Ref.Tag() + ":u:" + name
}
