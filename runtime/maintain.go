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
		if _, err := w.st.Sweep(ctx, p, maintenanceLimit); err != nil {
			warn("deleting expired jobs failed", p.Queue, err)
		}
	}
}
