package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// DeadEffect is an effect committed by a step or a completion on a key in
// another cluster slot that the relay could not apply: Redis refuses it
// (the key holds another type, the value would overflow, ...), or it is a
// follow-up job that cannot be enqueued. The step's commit stands; the
// other effects of the commit were applied; this one was not. It is kept
// in the dead stream of its job's partition, recorded on the job (an error
// of class "effect_dead"), logged at error level and counted in the
// metric sluice.effects.dead; an operator can list it and send it back
// (flow.Client.DeadEffects, RedriveEffects; sluice effects).
type DeadEffect struct {
	// ID names it for RedriveEffects: queue:partition:entry.
	ID string
	// JobID is the job whose commit wrote it ("" when unknown).
	JobID string
	// Error says why it could not be applied.
	Error string
	// Op, Key and Args are the write; Op is "ENQUEUE" for a follow-up job
	// (Key and Args empty), "" for an entry that could not be read.
	Op   string
	Key  string
	Args []string
	// At is when it was dead-lettered (store time).
	At time.Time
}

// deadEffect is d of partition p as users see it.
func deadEffect(p keys.Partition, d store.DeadEffect) DeadEffect {
	id, job := d.Refs(p)
	return DeadEffect{ID: id, JobID: job, Error: d.Error, Op: d.Op, Key: d.Key, Args: d.Args, At: d.At}
}

// reportDead makes dead-lettered effects visible: an error log each, the
// metric, and OnDeadEffect when set.
func (w *Worker) reportDead(ctx context.Context, p keys.Partition, dead []store.DeadEffect) {
	for _, d := range dead {
		de := deadEffect(p, d)
		w.log.Error("effect dead-lettered: it cannot be applied", "job", de.JobID, "op", de.Op, "key", de.Key,
			"error", de.Error, "dead_effect", de.ID)
		w.tel.deadEffect(ctx, p)
		if w.opts.OnDeadEffect != nil {
			w.opts.OnDeadEffect(ctx, de)
		}
	}
}
