package runtime

import (
	"context"
	"slices"
	"time"
)

// recordRetention records the worker's retention (Options RetainCompleted
// or DiscardCompleted, RetainArchived, RetainCancelled) as that of the
// queues it serves, so that a job an operator cancels (admin.Client
// CancelJob, the CLI, the console) is kept as long as the workers keep the
// jobs they cancel: the record of a queue is that of the worker of it
// that started last (store.RecordRetention), a start read from the
// store's clock, so that a worker whose clock runs ahead does not pass
// for the newer. Two round trips at Run (the store's time, then the
// write), none on a job's path. A failure (a Redis ACL user that does not
// allow the key, a connection lost) is logged and does not stop the
// worker: the maintenance loop writes the record again, once a
// MaintenanceInterval, until it succeeds (retryRetention). Until then
// operator calls go by the record an earlier worker wrote, where there is
// one (possibly another configuration), or fall back to the default
// retention and say so.
func (w *Worker) recordRetention(ctx context.Context) {
	queues := w.retentionQueues()
	w.retentionFrom, w.retentionAt = w.clk.Now(), time.Time{}
	_, err := w.writeRetention(ctx, queues)
	w.retentionOwed = err != nil
	if err != nil && ctx.Err() == nil {
		w.log.Warn("recording the worker's retention in Redis failed: operators' cancels in its queues "+
			"go by what an earlier worker recorded, or by the default, until a maintenance pass records it",
			"queues", queues, "err", err)
	}
}

// retryRetention writes the record Run could not (one script call;
// called from the maintenance loop, at most once a pass, while
// retentionOwed), with the time Run started as the record's start time,
// so that it replaces no record of a worker that started since. A
// failure again is logged at debug level: Run warned already, and a
// worker that may never write the key would warn every pass. Once the
// record is written, or left to a newer worker's, it is not written
// again: rewriting it every pass would make the record of a queue whose
// workers disagree (a rolling deploy) flip between their settings, each
// write undoing the other's, instead of settling on the last one to
// start.
func (w *Worker) retryRetention(ctx context.Context) {
	queues := w.retentionQueues()
	newer, err := w.writeRetention(ctx, queues)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("recording the worker's retention in Redis failed again", "queues", queues, "err", err)
		}
		return
	}
	w.retentionOwed = false
	if len(newer) > 0 {
		w.log.Info("recorded the worker's retention in Redis, after Run could not, except where a worker that "+
			"started later recorded its own", "queues", queues, "newer", newer)
		return
	}
	w.log.Info("recorded the worker's retention in Redis, after Run could not", "queues", queues)
}

// writeRetention writes the worker's record for queues, with the time it
// started as the store tells it (retentionStart), and answers the queues
// whose record a worker that started later holds.
func (w *Worker) writeRetention(ctx context.Context, queues []string) ([]string, error) {
	at, err := w.retentionStart(ctx)
	if err != nil {
		return nil, err
	}
	return w.st.RecordRetention(ctx, queues, w.opts.WorkerID, at)
}

// retentionStart is the time Run started on the store's clock: the
// store's time, read at Run (the injected clock's, on a test clock: no
// round trip), or, if that read failed, at the first retry, less the time
// gone since Run on the worker's clock (a span, which a clock set wrong
// does not change; the wall clock's is monotonic). Read once and kept: a
// retry, or a write go-redis re-sends, carries the same start.
func (w *Worker) retentionStart(ctx context.Context) (time.Time, error) {
	if !w.retentionAt.IsZero() {
		return w.retentionAt, nil
	}
	now, err := w.st.Time(ctx)
	if err != nil {
		return time.Time{}, err
	}
	w.retentionAt = now.Add(-w.clk.Now().Sub(w.retentionFrom))
	return w.retentionAt, nil
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
