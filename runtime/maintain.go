package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// maintenanceLimit bounds the jobs one maintenance script call touches.
const maintenanceLimit = 100

// sweepLimit bounds the expired jobs one maintenance call deletes per
// terminal state, and sweepBudget the time one maintenance pass spends on a
// partition while it has more to delete: a busy queue finishes thousands of
// jobs a second, and they all expire as fast once their retention ends.
const (
	sweepLimit  = 500
	sweepBudget = 200 * time.Millisecond
)

func (w *Worker) maintainLoop(ctx context.Context) {
	for n := 1; ; n++ {
		if n > 1 && w.retentionOwed { // the first pass runs just after Run's try
			w.retryRetention(ctx)
		}
		w.maintain(ctx)
		t := w.clk.NewTimer(w.opts.MaintenanceInterval)
		w.sig.Maintained.Signal(testsignal.Pass{Worker: w.opts.WorkerID, N: n})
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// maintain reclaims jobs whose lease expired, promotes due jobs and deletes
// finished jobs past their retention, on every partition served (after
// checking that no served queue was resized, checkLayouts): one
// script call per partition, repeated while a limit was reached (for
// deletions, until the pass has used sweepBudget on the partition).
// A call cut short by shutdown is not worth a warning.
func (w *Worker) maintain(ctx context.Context) {
	w.checkLayouts(ctx)
	for _, p := range w.parts {
		start := w.clk.Now()
		for {
			m, err := w.st.Maintain(ctx, p, maintenanceLimit, 10*maintenanceLimit, sweepLimit)
			if err != nil {
				if ctx.Err() == nil {
					w.log.Warn("maintenance failed (reaping expired leases, promoting due jobs, deleting expired jobs)", "queue", p.Queue, "err", err)
				}
				break
			}
			for _, r := range m.Reaped {
				w.logReaped(keys.Ref{Partition: p, Local: r.Local}.String(), p.Queue, r) // logging.go
				w.tel.reaped(p.Queue, r.State)
			}
			w.reapedDeaths(p, m.Reaped)
			if w.sig.Settled.Enabled() {
				for _, r := range m.Reaped {
					w.sig.Settled.Signal(testsignal.Settled{Worker: w.opts.WorkerID, JobID: keys.Ref{Partition: p, Local: r.Local}.String(),
						By: testsignal.Reap, State: r.State})
				}
			}
			more := len(m.Reaped) == maintenanceLimit ||
				m.Deleted >= sweepLimit && w.clk.Now().Sub(start) < sweepBudget
			if !more {
				break
			}
		}
	}
}
