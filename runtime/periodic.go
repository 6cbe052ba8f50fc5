package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
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
// A service that panics is logged and stopped, as one that fails is: it
// is the caller's code on a goroutine of the worker's, where a panic
// ended the process, every job in flight with it.
func (w *Worker) runPeriodic(ctx context.Context, services *sync.WaitGroup) {
	p := w.opts.Periodic
	if p == nil {
		return
	}
	services.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				w.log.Error("the periodic service panicked; it stopped", keyPanic, fmt.Sprint(v), keyStack, string(debug.Stack()))
			}
		}()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("the periodic service stopped", "err", err)
		}
	})
}
