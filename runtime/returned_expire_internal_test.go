package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestOutcomeOfReturnedHandlerAckedWhenLeaseLapsesBeforeSettle: a handler
// returns (here nil: a completion), and before its runner settles the
// attempt the worker's clock passes the lease's end (expire). abandon
// documents that "an attempt whose handler has returned acks its outcome,
// which ends the lease": it is not given back (giveBack), so the outcome
// must be acked. But abandon cancels the attempt's context with
// ErrLeaseLost all the same (lose), and settle then finds that cause and
// acks nothing: the job, whose lease the store still holds (a renewal
// landed there whose reply the worker had not read, or the store's clock
// is behind), stays running until the reaper charges it a crash, and a
// completed handler runs again.
//
// The window between the handler's return and the settlement is held
// open deterministically: the attempt is a suspect, and the test holds
// suspectMu, which the runner takes (suspectDone) after handlerReturned
// and before it settles.
func TestOutcomeOfReturnedHandlerAckedWhenLeaseLapsesBeforeSettle(t *testing.T) {
	j := settleAfterStop(t, func(context.Context, *Attempt) ([]byte, error) { return nil, nil }, func(w *Worker, a *Attempt) {
		// the worker's clock passes the lease's end (by its reckoning; the
		// store still holds the lease for about a minute)
		if back := w.expire(time.Now().Add(2 * time.Minute)); len(back) != 0 {
			t.Errorf("expire gave back %d attempts of a returned handler, want none: it acks its own outcome", len(back))
		}
	})
	if j.State != "completed" {
		t.Errorf("a handler that returned nil before its lease lapsed by the worker's clock left its job %q, want completed (its outcome acked: neither acked nor given back, the job waits for the reaper's crash and runs again)", j.State)
	}
}

// TestErrorReturnedBeforeShutdownCancelCountsAnAttempt: a handler returns
// an error, and the shutdown window ends (drain cancels the in-flight
// attempts with ErrShutdown) before its runner settles it. The error was
// the handler's outcome, and counts an attempt; settle read the
// attempt's cause after the return and took the shutdown for it: the job
// was handed back as a release, its error not counted, and a poison pill
// that fails as workers stop is never archived.
func TestErrorReturnedBeforeShutdownCancelCountsAnAttempt(t *testing.T) {
	j := settleAfterStop(t, func(context.Context, *Attempt) ([]byte, error) { return nil, errors.New("boom") }, func(w *Worker, a *Attempt) {
		a.mu.Lock()
		cancel := a.cancel
		a.mu.Unlock()
		cancel(ErrShutdown) // what drain does once the shutdown window ends
	})
	if j.State != "retryable" || j.Attempt != 1 {
		t.Errorf("a handler that returned an error before the shutdown cancelled it left its job %q with attempt %d, want retryable with attempt 1 (its error counted, not handed back as a release)", j.State, j.Attempt)
	}
}

// settleAfterStop runs one attempt of a job of kind "k" served by h, a
// suspect (see above), and calls stop between the handler's return and
// the runner's settlement; it returns the job once the attempt is
// settled.
func settleAfterStop(t *testing.T, h HandlerFunc, stop func(*Worker, *Attempt)) *store.Job {
	t.Helper()
	w, task := waitingAttempt(t, h, true)
	svc, cancel := context.WithCancel(context.Background())
	var services sync.WaitGroup
	w.acks.start(svc, &services)
	defer func() { cancel(); services.Wait() }()
	returned := task.a.returnedChan()
	suspectMu.Lock() // holds the runner between handlerReturned and its settlement
	go w.runner(w.pool, task)
	<-returned
	stop(w, task.a)
	suspectMu.Unlock()
	w.busy.Wait()

	j, _, err := w.st.Get(context.Background(), task.a.ref)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
