package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
)

// maintenanceLimit bounds the jobs one maintenance script call touches.
const maintenanceLimit = 100

// sweepLimit bounds the expired jobs one sweep call deletes per terminal
// state, and sweepBudget the time one maintenance pass spends sweeping a
// partition: a busy queue finishes thousands of jobs a second, and they all
// expire as fast once their retention ends.
const (
	sweepLimit  = 500
	sweepBudget = 200 * time.Millisecond
)

func (w *Worker) maintainLoop(ctx context.Context) {
	for {
		w.maintain(ctx)
		sleep(ctx, w.clk, w.opts.MaintenanceInterval)
		if ctx.Err() != nil {
			return
		}
	}
}

// maintain reclaims jobs whose lease expired, promotes due jobs and deletes
// finished jobs past their retention, on every partition served.
// A call cut short by shutdown is not worth a warning.
func (w *Worker) maintain(ctx context.Context) {
	warn := func(msg, queue string, err error) {
		if ctx.Err() == nil {
			w.log.Warn(msg, "queue", queue, "err", err)
		}
	}
	for _, p := range w.parts {
		for {
			reaped, err := w.st.Reap(ctx, p, maintenanceLimit)
			if err != nil {
				warn("reaping expired leases failed", p.Queue, err)
				break
			}
			for _, r := range reaped {
				w.log.Warn("reclaimed a job whose lease expired", "queue", p.Queue, "job", r.Local, "holder", r.Holder, "now", r.State)
				w.tel.reaped(p.Queue, r.State)
			}
			if len(reaped) < maintenanceLimit {
				break
			}
		}
		if _, _, err := w.st.Promote(ctx, p, 10*maintenanceLimit); err != nil {
			warn("promoting due jobs failed", p.Queue, err)
		}
		w.sweep(ctx, p, warn)
	}
}

// sweep deletes the partition's finished jobs whose retention passed, in
// full batches until none is left or the pass has used sweepBudget.
func (w *Worker) sweep(ctx context.Context, p keys.Partition, warn func(msg, queue string, err error)) {
	start := w.clk.Now()
	for {
		n, err := w.st.Sweep(ctx, p, sweepLimit)
		if err != nil {
			warn("deleting expired jobs failed", p.Queue, err)
			return
		}
		if n < sweepLimit || w.clk.Now().Sub(start) >= sweepBudget {
			return
		}
	}
}
