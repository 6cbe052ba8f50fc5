package runtime

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// reportDead makes dead-lettered effects visible: an error log each, the
// metric, and OnDeadEffect when set.
func (w *Worker) reportDead(ctx context.Context, p keys.Partition, dead []store.DeadEffect) {
	for _, d := range dead {
		de := d.Public(p)
		w.log.Error("effect dead-lettered: it cannot be applied", keyJob, de.JobID, keyQueue, p.Queue, "op", de.Op, "key", de.Key,
			keyErr, de.Error, "dead_effect", de.ID)
		w.tel.deadEffect(ctx, p)
		if w.opts.OnDeadEffect != nil {
			w.callOnDeadEffect(ctx, de)
		}
	}
}

// callOnDeadEffect calls OnDeadEffect, logging a panic as the other hooks
// do: on the relay's goroutine it ended the worker's process, every job
// in flight then reaped as a crash, and the effect, buried before, never
// reported again.
func (w *Worker) callOnDeadEffect(ctx context.Context, de sluicetype.DeadEffect) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("dead-effect handler panicked", "dead_effect", de.ID, "job", de.JobID, "panic", fmt.Sprint(p),
				"stack", string(debug.Stack()))
		}
	}()
	w.opts.OnDeadEffect(ctx, de)
}
