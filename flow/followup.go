package flow

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// FollowUp returns an effect that enqueues a job when the step (or the
// completion) that carries it commits: exactly once, never from a stale
// attempt, under an ID derived from the commit (so WithID is refused). It
// is always relayed through the job partition's outbox, so the follow-up
// appears shortly after the commit.
//
//	next, err := flow.FollowUp(ctx, SendReceipt{Order: id})
//	if err != nil {
//		return err
//	}
//	err = step.Commit(ctx, "receipt", next)
func FollowUp(ctx context.Context, args Args, opts ...EnqueueOption) (sluicetype.Effect, error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return sluicetype.Effect{}, step.ErrNoAttempt
	}
	pl := &planner{st: st.Store, known: st.Known(), maxPayload: DefaultMaxPayload, maxAttempts: DefaultMaxAttempts, layouts: st.Layouts}
	// A planner per call: its round-robin starts anywhere, or every
	// unkeyed follow-up would land on the same partition.
	pl.rr.Store(rand.Uint64())
	d, err := pl.draft(Item{Args: args, Opts: opts}, nil, traceHeaders(ctx))
	if err != nil {
		return sluicetype.Effect{}, err
	}
	// before it is placed: placing may register its queue, and bad input
	// writes nothing
	if !d.job.Generated {
		return sluicetype.Effect{}, fmt.Errorf("%w: a follow-up's ID is derived from its commit; WithID is not allowed", ErrInvalid)
	}
	pj, err := pl.place(ctx, d, nil)
	if err != nil {
		return sluicetype.Effect{}, err
	}
	job := pj.job
	job.Local, job.Generated = "", false // set from the commit when it is written
	// its routing key goes with it: a relay that finds its partition
	// retired places it again by that key, as producers place its
	// partition key (and so its unique key) by the new count
	return store.FollowUpEffect(store.FollowUp{Partition: pj.ref.Partition, Job: job, Route: d.key})
}
