package runtime

import (
	"context"
	"slices"
)

// recordRetention records the worker's retention (Options RetainCompleted
// or DiscardCompleted, RetainArchived, RetainCancelled) as that of the
// queues it serves, so that a job an operator cancels (admin.Client
// CancelJob, the CLI, the console) is kept as long as the workers keep the
// jobs they cancel: the last worker to start serving a queue wins. One
// round trip at Run, none on a job's path. A failure (a Redis ACL user
// that does not allow the key, for one) is logged and does not stop the
// worker: operator calls then go by an earlier record, or fall back to
// the default retention and say so.
func (w *Worker) recordRetention(ctx context.Context) {
	queues := make([]string, 0, len(w.served))
	for q := range w.served {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	if err := w.st.RecordRetention(ctx, queues, w.opts.WorkerID, w.clk.Now()); err != nil && ctx.Err() == nil {
		w.log.Warn("recording the worker's retention in Redis failed: operators' cancels in its queues "+
			"go by what an earlier worker recorded, or by the default", "queues", queues, "err", err)
	}
}
