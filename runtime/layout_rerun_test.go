package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// rerunAfterResize runs worker w (started by startWorker with o) until its
// first maintenance pass, stops it, grows queue "rq" from 2 to 4
// partitions, and runs w again: passed when that Run got as far as a
// maintenance pass, else what it returned.
func rerunAfterResize(t *testing.T, e *env, o runtime.Options) (w *workerRun, passed bool, err error) {
	t.Helper()
	ctx := context.Background()
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	w = e.startWorker(quickHandler(t), o)
	pass := func() { passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() }) }
	pass() // it read the layout (2 partitions, version 1)
	testkit.Must(t, w.Stop())

	ops := admin.New(e.newClient(nil))
	testkit.Must(t, ops.PauseQueue(ctx, "rq"))
	testkit.Must(t, ops.ResizeQueue(ctx, "rq", 4))
	passes.Drain()

	rctx, cancel := context.WithCancel(testsignal.WithWorker(ctx, e.Sig))
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx) }()
	defer func() { cancel(); <-done }()
	select {
	case err := <-done:
		done <- err // for the deferred wait
		return w, false, err
	case <-passes.C():
		return w, true, nil
	case <-time.After(testkit.Timeout):
		t.Fatal("the second Run neither returned nor made a maintenance pass")
	}
	return w, false, nil
}

// TestRunAgainAfterResizeChecksConfiguredCount: a worker configured with
// 2 partitions for a queue, whose Run returned, and which is run again
// after the queue grew to 4, fails in that Run with a
// LayoutMismatchError, as any worker whose count differs from the
// registry's does (docs/operations.md, "Queue layouts"): it does not
// serve the queue with the count it read at its first Run.
func TestRunAgainAfterResizeChecksConfiguredCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, passed, err := rerunAfterResize(t, e, runtime.Options{Queues: map[string]int{"rq": 1},
		Partitions: map[string]int{"rq": 2}, MaintenanceInterval: 10 * time.Millisecond})
	if passed {
		t.Fatal("the worker ran again with its old count of a queue resized since: want a LayoutMismatchError from Run")
	}
	var me *sluicetype.LayoutMismatchError
	if !errors.As(err, &me) || me.Queue != "rq" || me.Configured != 2 || me.Recorded != 4 {
		t.Fatalf("the second Run: %v, want a LayoutMismatchError naming rq, 2 and 4", err)
	}
}

// TestRunAgainAfterResizeServesNewLayout: a worker with no count of its
// queue, whose Run returned, and which is run again after the queue grew
// from 2 to 4 partitions, reads the layout anew at that Run (a restart):
// it serves the 4 partitions, and does not find its queue resized since
// it started.
func TestRunAgainAfterResizeServesNewLayout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.newClient(map[string]int{"rq": 2}).Enqueue(context.Background(), workArgs{}, flow.WithQueue("rq")); err != nil {
		t.Fatal(err)
	}
	w, passed, err := rerunAfterResize(t, e, runtime.Options{Queues: map[string]int{"rq": 1},
		MaintenanceInterval: 10 * time.Millisecond})
	if !passed {
		t.Fatalf("the second Run returned %v, want it to serve the queue", err)
	}
	if r := w.logs.find(func(r logRec) bool { return strings.Contains(r.Msg, "queue layout changed") }); r != nil {
		t.Errorf("the worker run again after the resize still had the layout of its first Run: it logged %q %v", r.Msg, r.Attrs)
	}
}
