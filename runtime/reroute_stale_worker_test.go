package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sticky"
)

// TestRerouteToWorkerThatStoppedServingQueue: admin.Reroute refuses a
// route with no fallback (sticky.Wait) to a worker that does not serve
// the job's queue, where the job would wait for ever. A worker running
// when its queue is resized stops claiming from the queue (it logs
// "restart it"): a Wait route to it is refused too (ErrWorkerNotFound),
// whether or not its heartbeat has said so since.
func TestRerouteToWorkerThatStoppedServingQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	reg := quickHandler(t)
	// old beats at its default interval, long after the resize; beating
	// every 10 ms
	old := e.startWorker(reg, runtime.Options{Queues: map[string]int{"rq": 1}, Partitions: map[string]int{"rq": 2},
		MaintenanceInterval: 10 * time.Millisecond})
	beating := e.startWorker(reg, runtime.Options{Queues: map[string]int{"rq": 1}, Partitions: map[string]int{"rq": 2},
		MaintenanceInterval: 10 * time.Millisecond, RenewInterval: 10 * time.Millisecond})
	pass := func(w string) { passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w }) }
	pass(old.ID())
	pass(beating.ID())

	ops := admin.New(e.newClient(nil))
	testkit.Must(t, ops.PauseQueue(ctx, "rq"))
	testkit.Must(t, ops.ResizeQueue(ctx, "rq", 4))
	passes.Drain()
	pass(old.ID())
	pass(old.ID()) // it noticed the resize: it claims from rq no more
	pass(beating.ID())
	pass(beating.ID())

	fresh := e.newClient(nil)
	id := ""
	for i := 0; id == ""; i++ {
		r, err := fresh.Enqueue(ctx, workArgs{}, flow.WithQueue("rq"), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if partitionIndex(t, r.ID) < 2 {
			id = r.ID
		}
	}
	testkit.Must(t, ops.ResumeQueue(ctx, "rq"))
	ws, _ := ops.Workers(ctx)
	err := ops.Reroute(ctx, id, sticky.To(old.ID(), sticky.Wait()))
	passes.Drain()
	for range 3 {
		pass(old.ID())
	}
	st := e.Job(id).State
	if err == nil {
		t.Fatalf("Reroute of %s (queue rq) with no fallback to %s, which stopped claiming from rq when it was resized, answered ok "+
			"(its registry entry: %+v); the job is %s, and waits for it for ever", id, old.ID(), ws, st)
	}
	if !errors.Is(err, admin.ErrWorkerNotFound) {
		t.Errorf("refused with %v, want ErrWorkerNotFound", err)
	}
	// the heartbeats after the resize say a worker serves rq no more
	// (sluice workers)
	beats := e.Sig.Renewed.Subscribe()
	defer beats.Close()
	for range 2 {
		beats.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == beating.ID() })
	}
	ws, err = ops.Workers(ctx)
	testkit.Must(t, err)
	for _, w := range ws {
		if _, ok := w.Queues["rq"]; w.ID == beating.ID() && ok {
			t.Errorf("the worker's registry entry lists rq, which it claims from no more: %+v", w)
		}
	}
}

// TestRerouteToWorkerResizedBackToItsCount: a queue resized from 2 to 4
// partitions and back to 2 has the count a worker started before the
// resizes serves, but not the layout: the worker stopped claiming from it
// at the first resize. A Wait route to it is refused before its next
// heartbeat, by the layout version the heartbeat registered.
func TestRerouteToWorkerResizedBackToItsCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	beats := e.Sig.Renewed.Subscribe()
	defer beats.Close()
	// it beats at its default interval, long after the resizes
	old := e.startWorker(quickHandler(t), runtime.Options{Queues: map[string]int{"rq": 1}, Partitions: map[string]int{"rq": 2},
		MaintenanceInterval: 10 * time.Millisecond})
	pass := func() { passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == old.ID() }) }
	beats.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == old.ID() }) // its first heartbeat
	ops := admin.New(e.newClient(nil))
	ws, err := ops.Workers(ctx)
	testkit.Must(t, err)
	if len(ws) != 1 || ws[0].QueueVersions["rq"] != 1 || ws[0].Queues["rq"] != 2 {
		t.Fatalf("registry entry before the resizes: %+v, want rq as 2 partitions of layout version 1", ws)
	}

	testkit.Must(t, ops.PauseQueue(ctx, "rq"))
	testkit.Must(t, ops.ResizeQueue(ctx, "rq", 4))
	passes.Drain()
	pass()
	pass() // it noticed the resize: it claims from rq no more
	testkit.Must(t, ops.ResizeQueue(ctx, "rq", 2))
	testkit.Must(t, ops.ResumeQueue(ctx, "rq"))
	r, err := e.newClient(nil).Enqueue(ctx, workArgs{}, flow.WithQueue("rq"))
	testkit.Must(t, err)

	err = ops.Reroute(ctx, r.ID, sticky.To(old.ID(), sticky.Wait()))
	if !errors.Is(err, admin.ErrWorkerNotFound) {
		t.Fatalf("Reroute with no fallback to %s, which stopped claiming from rq at its first resize, answered %v, want ErrWorkerNotFound; "+
			"the job is %s", old.ID(), err, e.Job(r.ID).State)
	}
	if !strings.Contains(err.Error(), "resized") {
		t.Errorf("the refusal does not say the queue was resized: %v", err)
	}
}
