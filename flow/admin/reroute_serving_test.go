package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/sticky"
)

// TestRerouteToWorkerNotServingQueue: Reroute refuses a route with no
// fallback (sticky.Wait) to a worker that is not live, because "the job
// would wait for it for ever". A live worker that does not serve the job's
// queue is the same case: it never claims from the queue's partitions, so
// the job never runs; its heartbeat records the queues it serves
// (WorkerInfo.Queues). Reroute answered ok; a worker serving the queue
// takes the route.
func TestRerouteToWorkerNotServingQueue(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	id := a.enqueue(email{To: "a"}, flow.WithQueue("mail"))
	// worker-b is live and serves the queue reports only
	if err := a.st.Heartbeat(a.ctx, sluicetype.WorkerInfo{ID: "worker-b", Host: "h", PID: 1, Started: a.clk.Now(),
		Queues: map[string]int{"reports": 1}, Concurrency: 10}, time.Minute); err != nil {
		t.Fatal(err)
	}
	ws, err := a.ops.Workers(a.ctx)
	if err != nil || len(ws) != 1 || ws[0].Queues["mail"] != 0 {
		t.Fatalf("workers: %+v, %v", ws, err)
	}
	err = a.ops.Reroute(a.ctx, id, sticky.To("worker-b", sticky.Wait()))
	if err == nil {
		t.Fatalf("Reroute of %s (queue mail) with no fallback to worker-b, which serves only %v, answered ok: the job waits for ever",
			id, ws[0].Queues)
	}
	if !errors.Is(err, admin.ErrWorkerNotFound) {
		t.Errorf("refused with %v, want ErrWorkerNotFound", err)
	}
	// a worker that serves the queue takes the route
	if err := a.st.Heartbeat(a.ctx, sluicetype.WorkerInfo{ID: "worker-m", Host: "h", PID: 2, Started: a.clk.Now(),
		Queues: map[string]int{"mail": 1}, Concurrency: 10}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.ops.Reroute(a.ctx, id, sticky.To("worker-m", sticky.Wait())); err != nil {
		t.Errorf("Reroute to worker-m, which serves mail: %v", err)
	}
}
