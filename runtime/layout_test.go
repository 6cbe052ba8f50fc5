package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// quickHandler registers a handler that returns at once.
func quickHandler(t *testing.T) *flow.Registry {
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[workArgs]) error { return nil }))
	return reg
}

// newClient is a flow client on e's namespace with partitions (nil: none
// configured), as another process would have.
func (e *env) newClient(partitions map[string]int) *flow.Client {
	e.T.Helper()
	c, err := flow.NewClient(e.RDB, flow.ClientOptions{Namespace: e.NS, Partitions: partitions})
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// partitionIndex is the partition of job ID id (queue:partition:local).
func partitionIndex(t *testing.T, id string) int {
	t.Helper()
	ref, ok := keys.ParseRef("", id)
	if !ok {
		t.Fatalf("bad job ID %q", id)
	}
	return ref.Index
}

// TestLayoutAgreedWithoutConfiguration: a queue created with 4 partitions
// by one process is used with 4 by a client, a worker and an operator
// configured with none: the client places jobs on all 4, the worker
// claims from all 4 (and says so in the registry of workers), and pausing
// the queue pauses all 4.
func TestLayoutAgreedWithoutConfiguration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	creator := e.newClient(map[string]int{"wide": 4})
	if _, err := creator.Enqueue(ctx, workArgs{}, flow.WithQueue("wide")); err != nil {
		t.Fatal(err)
	}

	used := map[int]bool{}
	var ids []string
	for i := range 32 {
		id := e.Enqueue(workArgs{}, flow.WithQueue("wide"), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		ids = append(ids, id)
		used[partitionIndex(t, id)] = true
	}
	if len(used) != 4 || !used[0] || !used[3] {
		t.Fatalf("an unconfigured client used partitions %v of a 4-partition queue, want 0..3", used)
	}
	w := e.startWorker(quickHandler(t), runtime.Options{Queues: map[string]int{"wide": 1}})
	for _, id := range ids {
		e.WaitState(id, flow.StateCompleted)
	}
	ops := admin.New(e.newClient(nil))
	ws, err := ops.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].ID != w.ID() || ws[0].Queues["wide"] != 4 {
		t.Errorf("the worker registry shows %+v, want the worker with wide:4", ws)
	}
	testkit.Must(t, ops.PauseQueue(ctx, "wide"))
	qs, err := ops.QueueStats(ctx, "wide", 0)
	if err != nil {
		t.Fatal(err)
	}
	if qs.Partitions != 4 || qs.Paused != 4 {
		t.Errorf("after PauseQueue: %d of %d partitions paused, want 4 of 4", qs.Paused, qs.Partitions)
	}
	for i := range 4 {
		if n := e.RDB.Exists(ctx, keys.Partition{NS: e.NS, Queue: "wide", Index: i}.Paused()).Val(); n != 1 {
			t.Errorf("partition %d is not paused", i)
		}
	}
}

// TestLayoutMismatchAtStart: a worker, a client and an operator
// configured with 2 partitions for a queue Redis records with 4 fail at
// start (Run, the first enqueue, the first operator call) with a
// LayoutMismatchError naming the queue and both counts; the client adds
// nothing.
func TestLayoutMismatchAtStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.newClient(map[string]int{"wide": 4}).Enqueue(ctx, workArgs{}, flow.WithQueue("wide")); err != nil {
		t.Fatal(err)
	}
	want := sluicetype.LayoutMismatchError{Namespace: e.NS, Queue: "wide", Configured: 2, Recorded: 4}
	check := func(who string, err error) {
		t.Helper()
		var me *sluicetype.LayoutMismatchError
		if !errors.Is(err, runtime.ErrLayoutMismatch) || !errors.As(err, &me) {
			t.Fatalf("%s: %v, want a LayoutMismatchError", who, err)
		}
		if *me != want {
			t.Errorf("%s: %+v, want %+v", who, *me, want)
		}
		if msg := err.Error(); !strings.Contains(msg, `"wide"`) || !strings.Contains(msg, "4") || !strings.Contains(msg, "2") {
			t.Errorf("%s: the message %q does not name the queue and both counts", who, msg)
		}
	}
	w, err := runtime.NewWorker(e.RDB, quickHandler(t), runtime.Options{Namespace: e.NS, Queues: map[string]int{"wide": 1},
		Partitions: map[string]int{"wide": 2}, Logger: testkit.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	check("worker Run", w.Run(ctx))
	// a queue only spawned into is checked as well
	w, err = runtime.NewWorker(e.RDB, quickHandler(t), runtime.Options{Namespace: e.NS,
		Partitions: map[string]int{"wide": 2}, Logger: testkit.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	check("worker Run (Partitions only)", w.Run(ctx))

	c := e.newClient(map[string]int{"wide": 2})
	_, err = c.Enqueue(ctx, workArgs{}, flow.WithQueue("wide"))
	check("client Enqueue", err)
	if strings.Contains(err.Error(), "job 0") {
		t.Errorf("Enqueue of one job says %q: no job index", err)
	}
	check("admin PauseQueue", admin.New(c).PauseQueue(ctx, "wide"))
	qs, err := admin.New(e.newClient(nil)).QueueStats(ctx, "wide", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := qs.Depth[flow.StateAvailable]; n != 1 || qs.Paused != 0 {
		t.Errorf("after the refused calls: %d jobs available, %d partitions paused; want 1, 0", n, qs.Paused)
	}
}

// TestWorkerStopsClaimingResizedQueue: a worker running when its queue is
// resized notices on its next maintenance pass, logs an error and claims
// no more from the queue, even from a partition it knows; a worker
// started after the resize serves it with the new count.
func TestWorkerStopsClaimingResizedQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	passes := e.Sig.Maintained.Subscribe()
	defer passes.Close()
	claims := e.Sig.Claimed.Subscribe()
	defer claims.Close()
	reg := quickHandler(t)
	old := e.startWorker(reg, runtime.Options{Queues: map[string]int{"rq": 1}, Partitions: map[string]int{"rq": 2},
		MaintenanceInterval: 10 * time.Millisecond})
	pass := func(w string) { passes.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w }) }
	pass(old.ID()) // it started: the queue is registered with 2

	ops := admin.New(e.newClient(nil))
	testkit.Must(t, ops.PauseQueue(ctx, "rq"))
	testkit.Must(t, ops.ResizeQueue(ctx, "rq", 4))
	passes.Drain() // passes buffered so far may have ended before the resize
	pass(old.ID()) // may have begun before it
	pass(old.ID())
	if r := old.logs.find(func(r logRec) bool { return strings.Contains(r.Msg, "queue layout changed") }); r == nil {
		t.Fatal("the worker logged nothing about the resize")
	} else if r.Attrs["queue"] != "rq" || r.Attrs["registry_partitions"] != int64(4) {
		t.Errorf("the log names %v", r.Attrs)
	}

	// a job on a partition the old worker knows
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
	passes.Drain()
	for range 3 {
		pass(old.ID())
	}
	if st := e.Job(id).State; st != flow.StateAvailable {
		t.Fatalf("after the resize, the old worker's queue's job is %s, want available", st)
	}
	nw := e.startWorker(reg, runtime.Options{Queues: map[string]int{"rq": 1}})
	c := claims.WaitFor(t, func(c testsignal.Claimed) bool { return c.JobID == id })
	if c.Worker != nw.ID() {
		t.Errorf("job %s claimed by %s, want the new worker %s", id, c.Worker, nw.ID())
	}
	e.WaitState(id, flow.StateCompleted)
}

// TestUnregisteredQueueRegisteredByWorker: a queue with jobs but no
// registry entry (written by an older version) is unknown to operators
// until a worker that serves it starts: it registers the queue (and the
// namespace) and runs its jobs.
func TestUnregisteredQueueRegisteredByWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	id := e.Enqueue(workArgs{})
	// as an older version left it: no registry entry
	testkit.Must(t, e.RDB.HDel(ctx, keys.Queues(e.NS), "default").Err())
	testkit.Must(t, e.RDB.SRem(ctx, keys.Namespaces, e.NS).Err())
	ops := admin.New(e.newClient(nil))
	if _, err := ops.ListJobs(ctx, admin.ListOptions{Queue: "default", State: flow.StateAvailable}); !errors.Is(err, admin.ErrQueueNotFound) {
		t.Fatalf("listing an unregistered queue: %v, want ErrQueueNotFound", err)
	}
	e.startWorker(quickHandler(t), runtime.Options{})
	e.WaitState(id, flow.StateCompleted)
	qs, err := ops.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Name != "default" || qs[0].Partitions != 1 || qs[0].Version != 1 {
		t.Errorf("Queues = %+v, want default with 1 partition", qs)
	}
	nss, err := admin.Namespaces(ctx, e.RDB)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(nss, e.NS) {
		t.Errorf("Namespaces = %v, want it to hold %s", nss, e.NS)
	}
}
