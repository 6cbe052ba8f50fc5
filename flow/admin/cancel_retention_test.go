package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// cancel cancels job id and answers only the error.
func (a *fixture) cancel(id string) error {
	_, err := a.ops.CancelJob(a.ctx, id)
	return err
}

// retainingWorker runs a worker of a's namespace and clock, serving
// queue "default", that keeps cancelled jobs keep (its archived and
// completed jobs the defaults) until it has started, then stops it, so
// that it claims none of the jobs the test enqueues next; it returns a
// store that sweeps as that worker does.
func retainingWorker(t *testing.T, a *fixture, id string, keep time.Duration) *store.Store {
	t.Helper()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[email]) error { return nil }))
	w := testkit.StartWorker(t, env.Client(t), reg, runtime.Options{Namespace: a.ns, Clock: a.clk,
		WorkerID: id, RetainCancelled: keep}, nil)
	w.Sig.Idle.Wait(t)
	testkit.Must(t, w.Stop())
	return store.New(env.Client(t), store.Config{NS: a.ns, RetainCompleted: runtime.DefaultRetainCompleted,
		RetainArchived: runtime.DefaultRetainArchived, RetainCancelled: keep, CrashLimit: 3, Now: a.clk.Now})
}

// keptFor is how long cancelled job id is kept: its deletion time in the
// partition's cancelled set, from now.
func (a *fixture) keptFor(id string) time.Duration {
	a.t.Helper()
	ref, _ := keys.ParseRef(a.ns, id)
	ms, err := a.st.Client().ZScore(a.ctx, ref.Partition.Terminal(flow.StateCancelled), ref.Local).Result()
	if err != nil {
		a.t.Fatalf("%s in the cancelled set: %v", id, err)
	}
	return time.UnixMilli(int64(ms)).Sub(a.clk.Now())
}

// TestCancelKeepsWorkersRetention: the workers of a namespace keep
// cancelled jobs 7 days (runtime.Options.RetainCancelled). An operator
// cancels a job with the console or the CLI (admin.CancelJob on a client
// with default options: `sluice web` has no way to set another, `sluice
// jobs cancel` only a --retain flag). The job must be kept as long as the
// workers keep the cancelled jobs they make, so that it can still be
// redriven on day 3; it was deleted by the workers' own sweep after 24h
// instead: the tool wrote the deletion time from its own default, never
// from the workers' setting, which no worker recorded in Redis.
func TestCancelKeepsWorkersRetention(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	worker := retainingWorker(t, a, "keeper", 7*24*time.Hour)
	id := a.enqueue(email{To: "a"})
	res, err := a.ops.CancelJob(a.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := admin.Cancelled{Previous: flow.StateAvailable, Kept: 7 * 24 * time.Hour, By: admin.KeptByWorkers, Worker: "keeper"}
	if res != want {
		t.Errorf("CancelJob answered %+v, want %+v", res, want)
	}
	a.clk.Advance(3 * 24 * time.Hour)
	p := keys.Partition{NS: a.ns, Queue: "default", Index: 0}
	if _, err := worker.Maintain(a.ctx, p, 100, 100, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ops.Job(a.ctx, id); errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("job %s cancelled through the operator API was deleted by the workers' sweep after 3 days; "+
			"the workers keep cancelled jobs 7 days", id)
	} else if err != nil {
		t.Fatal(err)
	}
	rep, err := a.ops.Redrive(a.ctx, id)
	if err != nil || len(rep.Moved) != 1 {
		t.Fatalf("redrive on day 3: %+v, %v", rep, err)
	}
}

// TestCancelRetentionSources: where an operator's cancel takes the
// retention from. The last worker to start serving the queue wins; an
// explicit option overrides it; a queue no worker recorded (old workers,
// or none yet) gets the default, and says so; a record that cannot be
// read is an error that cancels nothing, unless the option is given.
func TestCancelRetentionSources(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)

	// no queue yet: not the defaults (a misspelt queue read so)
	if r, err := a.ops.Retention(a.ctx, "default"); !errors.Is(err, admin.ErrQueueNotFound) {
		t.Errorf("Retention of a queue that does not exist: %+v, %v; want ErrQueueNotFound", r, err)
	}
	// no worker has recorded anything
	id := a.enqueue(email{To: "a"})
	r, err := a.ops.Retention(a.ctx, "default")
	if want := (admin.Retention{Completed: 24 * time.Hour, Archived: 7 * 24 * time.Hour, Cancelled: 24 * time.Hour}); err != nil || r != want {
		t.Errorf("Retention with nothing recorded: %+v, %v; want %+v", r, err, want)
	}
	res, err := a.ops.CancelJob(a.ctx, id)
	if want := (admin.Cancelled{Previous: flow.StateAvailable, Kept: flow.DefaultRetainCancelled, By: admin.KeptByDefault}); err != nil || res != want {
		t.Errorf("cancel with nothing recorded: %+v, %v; want %+v", res, err, want)
	}
	if d := a.keptFor(id); d != flow.DefaultRetainCancelled {
		t.Errorf("kept %v, want the default", d)
	}

	// two workers with different settings: the last to start wins
	retainingWorker(t, a, "first", 2*time.Hour)
	a.clk.Advance(time.Minute)
	retainingWorker(t, a, "second", 5*time.Hour)
	r, err = a.ops.Retention(a.ctx, "default")
	if err != nil || !r.Recorded || r.Worker != "second" || r.Cancelled != 5*time.Hour || !r.Started.Equal(a.clk.Now()) {
		t.Errorf("Retention after two workers: %+v, %v; want the second's 5h", r, err)
	}
	id = a.enqueue(email{To: "b"})
	if res, err := a.ops.CancelJob(a.ctx, id); err != nil || res.Kept != 5*time.Hour || res.By != admin.KeptByWorkers {
		t.Errorf("cancel: %+v, %v; want kept 5h by the workers", res, err)
	}

	// an explicit option overrides the record
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns, Clock: a.clk, RetainCancelled: 90 * time.Minute})
	testkit.Must(t, err)
	explicit := admin.New(c)
	id = a.enqueue(email{To: "c"})
	if res, err := explicit.CancelJob(a.ctx, id); err != nil || res.Kept != 90*time.Minute || res.By != admin.KeptByOption {
		t.Errorf("cancel with the option: %+v, %v; want kept 90m by the option", res, err)
	}
	if d := a.keptFor(id); d != 90*time.Minute {
		t.Errorf("kept %v, want 90m", d)
	}

	// a corrupt record: refused, nothing cancelled; the option still works
	testkit.Must(t, rdb.HSet(a.ctx, keys.Retention(a.ns), "default", "garbage").Err())
	id = a.enqueue(email{To: "d"})
	if _, err := a.ops.CancelJob(a.ctx, id); !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("cancel with a corrupt record: %v, want ErrMalformed", err)
	}
	if j, err := a.ops.Job(a.ctx, id); err != nil || j.State != flow.StateAvailable {
		t.Errorf("after the refused cancel: %+v, %v; want it still available", j, err)
	}
	if _, err := explicit.CancelJob(a.ctx, id); err != nil {
		t.Errorf("cancel with the option and a corrupt record: %v", err)
	}

	if _, err := a.ops.Retention(a.ctx, "no such queue"); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("Retention of a bad queue name: %v, want ErrInvalid", err)
	}
	if _, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns, RetainCancelled: -time.Hour}); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("a negative RetainCancelled: %v, want ErrInvalid", err)
	}
}

// TestWorkerRecordsDiscardCompleted: a worker that discards completed
// jobs records it as a negative retention.
func TestWorkerRecordsDiscardCompleted(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[email]) error { return nil }))
	w := testkit.StartWorker(t, env.Client(t), reg, runtime.Options{Namespace: a.ns, Clock: a.clk, WorkerID: "d",
		DiscardCompleted: true, RetainArchived: time.Hour}, nil)
	w.Sig.Idle.Wait(t)
	testkit.Must(t, w.Stop())
	r, err := a.ops.Retention(a.ctx, "default")
	if err != nil || r.Completed >= 0 || r.Archived != time.Hour || r.Cancelled != runtime.DefaultRetainCancelled {
		t.Errorf("Retention: %+v, %v; want completed deleted at once, archived 1h, cancelled the default", r, err)
	}
}
