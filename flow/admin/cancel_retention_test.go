package admin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// retainingWorker runs a worker of a's namespace and clock that keeps
// cancelled jobs keep (its archived and completed jobs 24h) until it has
// started, then stops it, so that it claims none of the jobs the test
// enqueues next; it returns a store that sweeps as that worker does.
func retainingWorker(t *testing.T, a *fixture, keep time.Duration) *store.Store {
	t.Helper()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[email]) error { return nil }))
	w := testkit.StartWorker(t, env.Client(t), reg, runtime.Options{Namespace: a.ns, Clock: a.clk,
		WorkerID: "keeper", RetainCancelled: keep}, nil)
	w.Sig.Idle.Wait(t)
	testkit.Must(t, w.Stop())
	return store.New(env.Client(t), store.Config{NS: a.ns, RetainCompleted: 24 * time.Hour,
		RetainArchived: 7 * 24 * time.Hour, RetainCancelled: keep, CrashLimit: 3, Now: a.clk.Now})
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
	worker := retainingWorker(t, a, 7*24*time.Hour)
	id := a.enqueue(email{To: "a"})
	if err := a.ops.CancelJob(a.ctx, id); err != nil {
		t.Fatal(err)
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
