package runtime_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// corruptLayout writes a registry value that is not a layout for each
// queue.
func (e *env) corruptLayout(queues ...string) {
	e.T.Helper()
	for _, q := range queues {
		testkit.Must(e.T, e.RDB.HSet(context.Background(), keys.Queues(e.NS), q, "not:a:layout").Err())
	}
}

// layoutLog is the first record at level or above that names queue and
// whose message says the layout cannot be read.
func (r *workerRun) layoutLog(queue string, level slog.Level) *logRec {
	return r.logs.find(func(l logRec) bool {
		return l.Level >= level && l.Attrs["queue"] == queue && strings.Contains(l.Msg, "cannot be read")
	})
}

// TestWorkerServesQueuesBesideCorruptLayout: a queue whose registry entry
// is not a layout is that queue's fault alone. A worker serving it and
// another starts, serves the other, claims nothing from it (its job stays
// available), logs an error naming it, and leaves it out of its
// heartbeat; a corrupt queue it only spawns into (Options.Partitions)
// gets an error too, one it neither serves nor spawns into a warning. A
// worker used to fail to start on any corrupt entry of its namespace.
func TestWorkerServesQueuesBesideCorruptLayout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	good := e.Enqueue(workArgs{}, flow.WithQueue("good"))
	bad := e.Enqueue(workArgs{}, flow.WithQueue("bad"))
	e.Enqueue(workArgs{}, flow.WithQueue("spawned"))
	e.Enqueue(workArgs{}, flow.WithQueue("other"))
	e.corruptLayout("bad", "spawned", "other")
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	w := e.startWorker(quickHandler(t), runtime.Options{Queues: map[string]int{"good": 1, "bad": 1},
		Partitions: map[string]int{"spawned": 1}, MaintenanceInterval: 10 * time.Millisecond, RenewInterval: 50 * time.Millisecond})
	e.WaitState(good, flow.StateCompleted)
	for range 3 {
		passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() })
	}
	if st := e.Job(bad).State; st != flow.StateAvailable {
		t.Errorf("the job of the queue with a corrupt layout is %s, want available", st)
	}
	for q, level := range map[string]slog.Level{"bad": slog.LevelError, "spawned": slog.LevelError, "other": slog.LevelWarn} {
		if w.layoutLog(q, level) == nil {
			t.Errorf("no %s record names queue %s and its unreadable layout", level, q)
		}
	}
	for range 2 { // a heartbeat is written by a whole round
		e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() })
	}
	ws, err := admin.New(e.Client).Workers(ctx)
	if err != nil || len(ws) != 1 || !maps.Equal(ws[0].Queues, map[string]int{"good": 1}) {
		t.Errorf("workers %+v (%v), want the worker serving good only", ws, err)
	}
}

// TestWorkerStopsClaimingQueueWhoseLayoutTurnsCorrupt: a served queue
// whose registry entry stops being a layout while the worker runs is
// noticed on the next maintenance pass: the worker logs an error naming
// it and claims from it no more, as for a resized queue; the check of its
// other queues goes on (a resize of one is still noticed). The check used
// to give up on every queue, and claim on, when one entry was corrupt.
func TestWorkerStopsClaimingQueueWhoseLayoutTurnsCorrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	w := e.startWorker(quickHandler(t), runtime.Options{Queues: map[string]int{"good": 1, "bad": 1},
		MaintenanceInterval: 10 * time.Millisecond})
	pass := func() { passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() }) }
	// both served; e.Client now knows both layouts
	e.WaitState(e.Enqueue(workArgs{}, flow.WithQueue("good")), flow.StateCompleted)
	e.WaitState(e.Enqueue(workArgs{}, flow.WithQueue("bad")), flow.StateCompleted)

	e.corruptLayout("bad")
	ops := admin.New(e.newClient(nil))
	testkit.Must(t, ops.PauseQueue(ctx, "good"))
	testkit.Must(t, ops.ResizeQueue(ctx, "good", 2))
	passes.Drain() // passes buffered so far may have ended before the changes
	pass()         // may have begun before them
	pass()
	if r := w.layoutLog("bad", slog.LevelError); r == nil {
		t.Error("the worker logged no error about the corrupt layout of bad")
	}
	if r := w.logs.find(func(l logRec) bool { return strings.Contains(l.Msg, "queue layout changed") }); r == nil || r.Attrs["queue"] != "good" {
		t.Errorf("the resize of good beside the corrupt bad: logged %+v, want the change of good", r)
	}
	id := e.Enqueue(workArgs{}, flow.WithQueue("bad")) // placed by the client's cached layout
	for range 3 {
		pass()
	}
	if st := e.Job(id).State; st != flow.StateAvailable {
		t.Errorf("a job of the queue whose layout turned corrupt is %s, want available", st)
	}
}

// TestWorkerWithNoReadableQueue: a worker none of whose queues has a
// readable layout has nothing to serve: Run fails with an error naming
// the queue (ErrMalformed).
func TestWorkerWithNoReadableQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.Enqueue(workArgs{}, flow.WithQueue("bad"))
	e.corruptLayout("bad")
	w, err := runtime.NewWorker(e.RDB, quickHandler(t), runtime.Options{Namespace: e.NS, Queues: map[string]int{"bad": 1},
		Logger: testkit.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background()); !errors.Is(err, flow.ErrMalformed) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Run: %v, want ErrMalformed naming queue bad", err)
	}
}
