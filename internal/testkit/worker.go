package testkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// Worker is a runtime.Worker running in the background, with the signals
// it sends.
type Worker struct {
	*runtime.Worker
	Sig *testsignal.Worker

	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed
	once   sync.Once
	stop   error
}

// errNotStopped is Stop's error when Run does not return.
var errNotStopped = errors.New("testkit: the worker did not stop within the timeout (a handler still in flight?)")

// StartWorker runs a worker on rdb with handlers h and options o (a nil
// Logger is Quiet) until Stop or the end of the test, which fails if Run
// did not return nil. It sends its signals to sig, or, when sig is nil,
// to a set of its own (Worker.Sig).
func StartWorker(tb testing.TB, rdb redis.UniversalClient, h runtime.Handlers, o runtime.Options, sig *testsignal.Worker) *Worker {
	tb.Helper()
	if o.Logger == nil {
		o.Logger = Quiet
	}
	if sig == nil {
		sig = testsignal.NewWorker()
	}
	rw, err := runtime.NewWorker(rdb, h, o)
	if err != nil {
		tb.Fatalf("testkit: worker: %v", err)
	}
	ctx, cancel := context.WithCancel(testsignal.WithWorker(context.Background(), sig))
	w := &Worker{Worker: rw, Sig: sig, cancel: cancel, done: make(chan struct{})}
	go func() {
		w.err = rw.Run(ctx)
		close(w.done)
	}()
	tb.Cleanup(func() {
		if first, err := w.stopFirst(); first && err != nil {
			tb.Errorf("worker %s: %v", rw.ID(), err)
		}
	})
	return w
}

// Cancel cancels the worker's Run without waiting for it.
func (w *Worker) Cancel() { w.cancel() }

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Err is what Run returned; call it once Done is closed.
func (w *Worker) Err() error { return w.err }

// Stop cancels Run, waits for it to return (for Timeout at most) and
// returns its error, or one saying that it did not return. Only the first
// call stops; later ones return the same.
func (w *Worker) Stop() error {
	_, err := w.stopFirst()
	return err
}

// stopFirst is Stop; first says whether this call stopped the worker.
func (w *Worker) stopFirst() (first bool, err error) {
	w.once.Do(func() {
		first = true
		w.cancel()
		t := time.NewTimer(Timeout)
		defer t.Stop()
		select {
		case <-w.done:
			w.stop = w.err
		case <-t.C:
			w.stop = errNotStopped
		}
	})
	return first, w.stop
}
