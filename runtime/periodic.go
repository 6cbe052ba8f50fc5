package runtime

import (
	"context"
	"sync"
)

// Periodic is a service a Worker runs beside its own loops while it runs
// (Options.Periodic). flow.Scheduler is one: it enqueues the jobs of
// periodic schedules, and any number of workers may run the same schedules.
type Periodic interface {
	// Run works until ctx is cancelled. The worker cancels ctx when its
	// shutdown begins and waits for Run to return.
	Run(ctx context.Context) error
}

// runPeriodic starts Options.Periodic, if set, as one of the worker's
// services; it stops when ctx (the worker's Run context) is cancelled.
func (w *Worker) runPeriodic(ctx context.Context, services *sync.WaitGroup) {
	p := w.opts.Periodic
	if p == nil {
		return
	}
	services.Go(func() {
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("the periodic service stopped", "err", err)
		}
	})
}
