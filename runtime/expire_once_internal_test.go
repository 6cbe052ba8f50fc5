package runtime

import (
	"context"
	"testing"
	"time"
)

// TestExpireTakesAnAttemptOnce: two passes of expire (the renewal loop's,
// and a failed renewal's, which run side by side) find the same attempt
// past its lease end. The first marks it lapsed under its lock, then
// abandons it after letting the lock go; a second pass in between must
// leave it to the first. Before, it took the attempt again, and both
// handed its job back: the reap logged and counted twice (found by an
// audit). The first pass's marking is made here by hand, at the point
// where the second would run.
func TestExpireTakesAnAttemptOnce(t *testing.T) {
	running, done := make(chan struct{}), make(chan struct{})
	w, task := waitingAttempt(t, HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		close(running)
		<-done
		return nil, nil
	}), false)
	go w.runner(w.pool, task)
	<-running
	a := task.a
	late := a.leaseEnd.Add(time.Second)

	a.mu.Lock()
	a.lapsed = true // the first pass took it, and has not abandoned it yet
	a.mu.Unlock()
	if back := w.expire(late); len(back) != 0 {
		t.Errorf("a second expire pass gave up the attempt the first had taken: %d to give back", len(back))
	}
	if !a.abandon() { // the first pass goes on
		t.Errorf("the first pass's abandon: nothing to give back")
	}
	close(done)
	w.busy.Wait()
}
