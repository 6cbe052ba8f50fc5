package runtime

import "context"

// maintenanceLimit bounds the jobs one maintenance script call touches.
const maintenanceLimit = 100

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
func (w *Worker) maintain(ctx context.Context) {
	for _, p := range w.parts {
		for {
			reaped, err := w.st.Reap(ctx, p, maintenanceLimit)
			if err != nil {
				w.log.Warn("reaping expired leases failed", "queue", p.Queue, "err", err)
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
			w.log.Warn("promoting due jobs failed", "queue", p.Queue, "err", err)
		}
		if _, err := w.st.Sweep(ctx, p, maintenanceLimit); err != nil {
			w.log.Warn("deleting expired jobs failed", "queue", p.Queue, "err", err)
		}
	}
}
