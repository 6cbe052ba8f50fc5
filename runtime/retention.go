package runtime

import (
	"context"
	"slices"
)

// recordRetention records the worker's retention (Options RetainCompleted
// or DiscardCompleted, RetainArchived, RetainCancelled) as that of the
// queues it serves, so that a job an operator cancels (admin.Client
// CancelJob, the CLI, the console) is kept as long as the workers keep the
// jobs they cancel: the last worker to write the record for a queue wins.
// One round trip at Run, none on a job's path. A failure (a Redis ACL user
// that does not allow the key, a connection lost) is logged and does not
// stop the worker: the maintenance loop writes the record again, once a
// MaintenanceInterval, until it succeeds (retryRetention). Until then
// operator calls go by the record an earlier worker wrote, where there is
// one (possibly another configuration), or fall back to the default
// retention and say so.
func (w *Worker) recordRetention(ctx context.Context) {
	queues := w.retentionQueues()
	w.retentionAt = w.clk.Now()
	_, err := w.st.RecordRetention(ctx, queues, w.opts.WorkerID, w.retentionAt)
	w.retentionOwed = err != nil
	if err != nil && ctx.Err() == nil {
		w.log.Warn("recording the worker's retention in Redis failed: operators' cancels in its queues "+
			"go by what an earlier worker recorded, or by the default, until a maintenance pass records it",
			"queues", queues, "err", err)
	}
}

// retryRetention writes the record Run could not (one script call; called from
// the maintenance loop, at most once a pass, while retentionOwed), with
// the time Run started as the record's start time. A
// failure again is logged at debug level: Run warned already, and a
// worker that may never write the key would warn every pass. Once the
// record is written it is not written again: rewriting it every pass
// would make the record of a queue whose workers disagree (a rolling
// deploy) flip between their settings, each write undoing the other's,
// instead of settling on the last one to start.
func (w *Worker) retryRetention(ctx context.Context) {
	queues := w.retentionQueues()
	if _, err := w.st.RecordRetention(ctx, queues, w.opts.WorkerID, w.retentionAt); err != nil {
		if ctx.Err() == nil {
			w.log.Debug("recording the worker's retention in Redis failed again", "queues", queues, "err", err)
		}
		return
	}
	w.retentionOwed = false
	w.log.Info("recorded the worker's retention in Redis, after Run could not", "queues", queues)
}

// retentionQueues is the queues the worker serves, sorted.
func (w *Worker) retentionQueues() []string {
	queues := make([]string, 0, len(w.served))
	for q := range w.served {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	return queues
}
