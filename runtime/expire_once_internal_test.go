package runtime

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
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
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	running, done := make(chan struct{}), make(chan struct{})
	h := kindHandlers{"k": HandlerFunc(func(ctx context.Context, a *Attempt) ([]byte, error) {
		close(running)
		<-done
		return nil, nil
	})}
	w, err := NewWorker(rdb, h, Options{Namespace: "t", Queues: map[string]int{"q": 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p := w.st.Partition("q", 0)
	if _, err := w.st.Enqueue(ctx, p, []store.NewJob{{Local: "j", Kind: "k", Payload: []byte("x"), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	res, err := w.st.Claim(ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: w.opts.WorkerID, Nonce: "n"})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
	}
	w.attemptBase = ctx
	w.pool = &runners{tasks: make(chan runTask, 1), quit: make(chan struct{})}
	defer close(w.pool.quit)
	w.start(ctx, p, res.Jobs[0], time.Now())
	task := <-w.pool.tasks
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
