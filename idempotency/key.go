package idempotency

import (
	"context"

	"github.com/sluicehq/sluice/internal/attempt"
)

// Key returns an idempotency key for an external call made by step: the
// same in every attempt of this job (job ID and step name), different for
// every other job or step, but for one case: the key is
// the job's ID and step joined by ':', so where job IDs hold ':' (as
// flow.WithID allows) and steps given do too, job "a:b" with step "c" and
// job "a" with step "b:c" in the same partition get one key. Keep ':' out
// of one of the two: generated IDs have none, a schedule's jobs' IDs do
// ("sched:NAME:TIME"). It returns "" outside a running job.
//
// The key is made of the job's ID, not of when the job was made: a job
// enqueued again under the ID of one deleted after its retention
// (flow.WithID) gets that job's keys, and a provider that remembers them
// answers its old response. Where an ID may come back, pass a part of
// your own that differs per job (Key(ctx, "charge:"+invoiceID)).
func Key(ctx context.Context, step string) string {
	st, ok := attempt.From(ctx)
	if !ok {
		return ""
	}
	return st.Store.NS() + ":" + st.Ref.String() + ":" + step
}

// SlotKey returns a Redis key in the running job's cluster slot: the job's
// partition hash tag followed by name. Effects on it apply in the same
// script as the step's checkpoint rather than through the outbox. Every job
// of the partition shares the slot, so the key is per partition, not per
// job: put a job-specific part in name (or a field) when that matters. It
// returns "" outside a running job.
func SlotKey(ctx context.Context, name string) string {
	st, ok := attempt.From(ctx)
	if !ok {
		return ""
	}
	return st.Ref.Tag() + ":u:" + name
}
