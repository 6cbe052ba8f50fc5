package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// reliability runs a worker's death reports and stuck watches, off the
// paths that claim, run and ack jobs.
type reliability struct {
	deathsOnce sync.Once
	deathQueue chan deathItem
	active     atomic.Int32 // reports being made
	// watching counts the stuck watches of attempts told to stop, which
	// report a handler still running as Run ends (watchStopped)
	watching atomic.Int32

	mu  sync.Mutex
	run *relRun // of the current Run; nil when not running
}

// relRun is the reliability machinery of one Run.
type relRun struct {
	ctx  context.Context // of OnDeath, OnStuck and their Redis calls
	quit chan struct{}   // closed when Run ends
	wg   sync.WaitGroup
}

// startReliability starts death delivery and the no-progress watch for a
// run of the worker; the function it returns stops them. Stopping waits
// for the reports in progress, those of handlers told to stop that still
// run (watchStopped) and the queued deaths for up to CancelGrace, then
// cancels their context and returns.
func (w *Worker) startReliability(bg context.Context) (stop func()) {
	r := &w.rel
	ctx, cancel := context.WithCancelCause(bg)
	run := &relRun{ctx: ctx, quit: make(chan struct{})}
	r.mu.Lock()
	r.run = run
	r.mu.Unlock()
	if w.opts.OnDeath != nil {
		r.spawn(w.deathLoop)
	}
	if w.opts.StuckNoProgress > 0 {
		r.spawn(w.progressWatch)
	}
	return func() {
		defer cancel(ErrShutdown)
		r.mu.Lock()
		r.run = nil
		close(run.quit)
		r.mu.Unlock()
		done := make(chan struct{})
		go func() {
			run.wg.Wait()
			close(done)
		}()
		if r.active.Load() == 0 && r.watching.Load() == 0 && len(r.deaths()) == 0 {
			<-done // all idle: they return at once
			return
		}
		t := w.clk.NewTimer(w.opts.CancelGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C():
			w.log.Warn("death or stuck handlers still running at shutdown; not waiting for them")
		}
	}
}

// deaths is the queue of deaths waiting for OnDeath.
func (r *reliability) deaths() chan deathItem {
	r.deathsOnce.Do(func() { r.deathQueue = make(chan deathItem, deathQueueSize) })
	return r.deathQueue
}

// spawn runs f in a goroutine the current Run waits for; f must return
// soon after run.quit is closed. Outside Run it does nothing, and
// returns false.
func (r *reliability) spawn(f func(run *relRun)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.run
	if run == nil {
		return false
	}
	run.wg.Go(func() { f(run) })
	return true
}
