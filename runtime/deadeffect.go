package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// reportDead makes dead-lettered effects visible: an error log each, the
// metric, and OnDeadEffect when set.
func (w *Worker) reportDead(ctx context.Context, p keys.Partition, dead []store.DeadEffect) {
	for _, d := range dead {
		de := d.Public(p)
		w.log.Error("effect dead-lettered: it cannot be applied", "job", de.JobID, "op", de.Op, "key", de.Key,
			"error", de.Error, "dead_effect", de.ID)
		w.tel.deadEffect(ctx, p)
		if w.opts.OnDeadEffect != nil {
			w.opts.OnDeadEffect(ctx, de)
		}
	}
}
