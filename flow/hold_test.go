package flow_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type poisonPill struct{ Batch string }

func (poisonPill) Kind() string { return "poison_pill" }

// TestQuarantineHoldThroughClient: on a queue of 4 partitions, a copy of
// a quarantined job (same kind and arguments, another ID) enqueued with
// WithQuarantineHold meets it on its partition and waits, held, instead
// of crashing workers again; a job with other arguments runs; releasing
// the quarantined job lets the copy run.
func TestQuarantineHoldThroughClient(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"default": 4}
	reg := flow.NewRegistry()
	var runs atomic.Int32
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[poisonPill]) error {
		runs.Add(1)
		if job.Args.Batch == "bad" {
			panic("malformed batch")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Partitions: parts, CrashLimit: 1}, nil)
	ctx := context.Background()
	first, err := c.Enqueue(ctx, poisonPill{Batch: "bad"}, flow.WithQuarantineHold())
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, c, w.Sig, first.ID, flow.StateQuarantined)

	copied, err := c.Enqueue(ctx, poisonPill{Batch: "bad"}, flow.WithQuarantineHold())
	if err != nil || copied.HeldBy != first.ID || copied.Duplicate {
		t.Fatalf("copy: %+v %v, want added, held by %s", copied, err, first.ID)
	}
	if strings.Split(copied.ID, ":")[1] != strings.Split(first.ID, ":")[1] {
		t.Fatalf("copy %s is not on the partition of %s", copied.ID, first.ID)
	}
	other, err := c.Enqueue(ctx, poisonPill{Batch: "good"}, flow.WithQuarantineHold())
	if err != nil || other.HeldBy != "" {
		t.Fatalf("other: %+v %v", other, err)
	}
	testkit.WaitState(t, c, w.Sig, other.ID, flow.StateCompleted)
	// held, it is never due while its twin stays quarantined: no RunAt,
	// not the store's far-future stand-in for "never"
	if info, err := c.Job(ctx, copied.ID); err != nil || info.State != flow.StateScheduled || info.HeldBy != first.ID || !info.RunAt.IsZero() {
		t.Fatalf("copy: %+v %v, want scheduled, held by %s, with no RunAt", info, err, first.ID)
	}
	page, err := admin.New(c).ListJobs(ctx, admin.ListOptions{Queue: "default", State: flow.StateScheduled})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].HeldBy != first.ID || !page.Jobs[0].RunAt.IsZero() {
		t.Fatalf("listing scheduled jobs: %+v %v, want the copy, held by %s, with no RunAt", page.Jobs, err, first.ID)
	}
	before := runs.Load()
	if _, err := admin.New(c).Release(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	// both run, and crash again; in either order (the copy is no suspect,
	// so a claim may take it first)
	testkit.WaitState(t, c, w.Sig, copied.ID, flow.StateQuarantined)
	testkit.WaitState(t, c, w.Sig, first.ID, flow.StateQuarantined)
	if runs.Load() < before+2 {
		t.Fatalf("%d runs after the release, want the released job's and its copy's", runs.Load()-before)
	}
}
