package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/sluicehq/sluice/internal/testsignal"
)

// errAttemptFailed cancels the tracked goroutines of an attempt whose
// handler failed.
var errAttemptFailed = errors.New("sluice: the attempt failed")

// trackedState is an attempt's tracked goroutines (Go).
type trackedState struct {
	n       int // running
	wg      sync.WaitGroup
	closing bool // the handler returned
	ignore  bool // failures no longer decide the outcome
	fail    *result
	next    int
	cancels map[int]context.CancelCauseFunc
	gids    map[uint64]bool
}

// Go runs f in a goroutine tracked by the attempt, like errgroup:
//
//   - success is not acked while tracked goroutines run: when the handler
//     returns nil, the worker waits for all of them first;
//   - the first tracked failure (an error or a panic) fails the attempt as
//     if the handler had returned it (a panic counts as a crash) and
//     cancels the handler's and the other tracked goroutines' contexts,
//     with cause ErrTrackedFailed wrapping it;
//   - they run under the handler's context, so a lost lease, a timeout, a
//     deadline or shutdown cancels them like the handler;
//   - when the handler fails, they are cancelled and get CancelGrace to
//     return before the failure is recorded.
//
// Go may be called from the handler and from tracked goroutines; it fails
// with ErrAttemptDone once the handler returned and no tracked goroutine is
// left. The stuck watch reports their stacks with the handler's.
func (a *Attempt) Go(f func(ctx context.Context) error) error {
	if a.ctl.ctx == nil {
		return ErrNoAttempt
	}
	return a.goWith(a.ctl.ctx, f)
}

func (a *Attempt) goWith(parent context.Context, f func(ctx context.Context) error) error {
	if a.ctl.w == nil {
		return ErrNoAttempt
	}
	c := &a.ctl
	t := &c.tr
	ctx, cancel := context.WithCancelCause(parent)
	c.mu.Lock()
	if t.closing && t.n == 0 {
		c.mu.Unlock()
		cancel(nil)
		return ErrAttemptDone
	}
	if t.cancels == nil {
		t.cancels, t.gids = map[int]context.CancelCauseFunc{}, map[uint64]bool{}
	}
	id := t.next
	t.next++
	t.n++
	t.wg.Add(1)
	t.cancels[id] = cancel
	if t.ignore { // the attempt already failed
		cancel(errAttemptFailed)
	}
	c.mu.Unlock()
	go func() {
		gid := goid()
		c.mu.Lock()
		t.gids[gid] = true
		c.mu.Unlock()
		var r result
		normal := false
		defer func() {
			if p := recover(); p != nil {
				r = result{panic: p, stack: debug.Stack()}
			} else if !normal {
				r = result{panic: "tracked goroutine called runtime.Goexit", stack: debug.Stack()}
			}
			cancel(nil)
			c.mu.Lock()
			delete(t.gids, gid)
			delete(t.cancels, id)
			t.n--
			first := t.fail == nil && !t.ignore && (r.err != nil || r.panic != nil)
			if first {
				t.fail = &r
			}
			c.mu.Unlock()
			if first && r.panic != nil {
				a.stop(fmt.Errorf("%w: panic: %v", ErrTrackedFailed, r.panic))
			} else if first {
				a.stop(fmt.Errorf("%w: %w", ErrTrackedFailed, r.err))
			}
			t.wg.Done()
		}()
		r.err = f(ctx)
		if r.err != nil {
			probe(r.err) // a panic here is the goroutine's, as in recovered
		}
		normal = true
	}()
	return nil
}

// join settles the handler's result r with the attempt's tracked
// goroutines: it waits for them after a success, cancels them after a
// failure, and lets the first tracked failure (if it came first) decide.
func (w *Worker) join(a *Attempt, r result) result {
	c := &a.ctl
	t := &c.tr
	c.mu.Lock()
	t.closing = true
	failed := r.err != nil || r.panic != nil
	if t.fail != nil {
		r = *t.fail
		failed = true
	}
	if t.n == 0 {
		t.ignore = true
		c.mu.Unlock()
		return r
	}
	if failed {
		t.ignore = true
		for _, cancel := range t.cancels {
			cancel(errAttemptFailed)
		}
	}
	c.mu.Unlock()
	w.waitTracked(a, failed)
	c.mu.Lock()
	defer c.mu.Unlock()
	t.ignore = true
	if !failed && t.fail != nil {
		r = *t.fail
	}
	return r
}

// waitTracked waits for the attempt's tracked goroutines; bounded, it
// gives up after CancelGrace.
func (w *Worker) waitTracked(a *Attempt, bounded bool) {
	done := make(chan struct{})
	go func() {
		a.ctl.tr.wg.Wait()
		close(done)
	}()
	w.sig.Tracked.Signal(testsignal.Job{Worker: a.Worker, JobID: a.ID})
	if !bounded {
		<-done
		return
	}
	g := w.clk.NewTimer(w.opts.CancelGrace)
	defer g.Stop()
	select {
	case <-done:
	case <-g.C():
		w.log.Warn("tracked goroutines ignored cancellation; settling the attempt without them", "job", a.ID)
	}
}
