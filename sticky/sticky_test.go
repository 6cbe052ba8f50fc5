package sticky_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/sticky"
)

var shared redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &shared, false) }

type render struct {
	Pinned bool
	I      int
}

func (render) Kind() string { return "render" }

// fleet is a registry whose handler counts what each worker ran.
type fleet struct {
	reg                  *flow.Registry
	pinnedByOthers, free atomic.Int64
	pinnedByB            atomic.Int64
	onB                  func(*flow.Job[render]) error
	sig                  *testsignal.Worker // of every worker of the fleet
}

func newFleet(t *testing.T) *fleet {
	f := &fleet{reg: flow.NewRegistry(), sig: testsignal.NewWorker()}
	err := flow.Register(f.reg, func(ctx context.Context, job *flow.Job[render]) error {
		switch {
		case job.Args.Pinned && workerOf(ctx) == "worker-b":
			f.pinnedByB.Add(1)
			if f.onB != nil {
				return f.onB(job)
			}
		case job.Args.Pinned:
			f.pinnedByOthers.Add(1)
		default:
			f.free.Add(1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type workerKey struct{}

func workerOf(ctx context.Context) string { s, _ := ctx.Value(workerKey{}).(string); return s }

// named wraps handlers so each worker's handler context says which it is.
type named struct {
	reg  *flow.Registry
	name string
}

func (n named) Handler(kind string) (runtime.Handler, bool) {
	h, ok := n.reg.Handler(kind)
	if !ok {
		return nil, false
	}
	return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
		return h.Work(context.WithValue(ctx, workerKey{}, n.name), a)
	}), true
}

// start runs the worker name of fleet f in namespace ns, signalling to
// f.sig, until the test ends.
func start(t *testing.T, rdb redis.UniversalClient, f *fleet, ns, name string, opts runtime.Options) {
	t.Helper()
	opts.Namespace, opts.WorkerID = ns, name
	testkit.StartWorker(t, rdb, named{f.reg, name}, opts, f.sig)
}

// settledUntil waits until cond holds, checking it after each job the
// fleet settles (the handler counts before its job is settled).
func (f *fleet) settledUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Until(t, &f.sig.Settled, nil, what, func() (bool, string) { return cond(), "" })
}

// TestPinnedBacklogDoesNotSlowOthers: 5,000 high-priority jobs pinned to B
// (absent) do not hold up A's unpinned work, and neither A nor C runs any
// of them; B, once it comes, runs them all.
func TestPinnedBacklogDoesNotSlowOthers(t *testing.T) {
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	f := newFleet(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var items []flow.Item
	for i := range 5000 {
		items = append(items, flow.Item{Args: render{Pinned: true, I: i}, Opts: []flow.EnqueueOption{
			sticky.To("worker-b", sticky.Wait()), flow.WithPriority(9)}})
	}
	for i := range 500 {
		items = append(items, flow.Item{Args: render{I: i}})
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	start(t, rdb, f, ns, "worker-a", runtime.Options{})
	start(t, rdb, f, ns, "worker-c", runtime.Options{})
	f.settledUntil(t, "A and C to run the unpinned jobs", func() bool { return f.free.Load() == 500 })
	t.Logf("500 unpinned jobs ran in %s beside 5,000 pinned ones", time.Since(began))
	if f.pinnedByOthers.Load() != 0 {
		t.Fatalf("other workers ran %d pinned jobs", f.pinnedByOthers.Load())
	}
	start(t, rdb, f, ns, "worker-b", runtime.Options{})
	f.settledUntil(t, "B to run its pinned jobs", func() bool { return f.pinnedByB.Load() == 5000 })
	if f.pinnedByOthers.Load() != 0 {
		t.Fatalf("other workers ran %d pinned jobs", f.pinnedByOthers.Load())
	}
}

// TestFallbacks: with B away, After hands its job over after the delay,
// FailAfter archives it, Wait keeps it (fake clock).
func TestFallbacks(t *testing.T) {
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	clk := runtime.NewFakeClock(time.Now())
	f := newFleet(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	after, _ := c.Enqueue(ctx, render{Pinned: true, I: 1}, sticky.To("worker-b", sticky.After(time.Minute)))
	fail, _ := c.Enqueue(ctx, render{Pinned: true, I: 2}, sticky.To("worker-b", sticky.FailAfter(time.Minute)))
	wait, _ := c.Enqueue(ctx, render{Pinned: true, I: 3}, sticky.To("worker-b", sticky.Wait()))
	start(t, rdb, f, ns, "worker-a", runtime.Options{Clock: clk, IdlePoll: time.Second})
	// A found nothing for it and armed its idle poll; past the fallbacks'
	// delay, its next claim hands After's job to it and archives
	// FailAfter's.
	f.sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == "worker-a" })
	clk.Advance(time.Minute + time.Second)
	state := func(id string) string {
		info, err := c.Job(ctx, id)
		if err != nil {
			return err.Error()
		}
		return info.State + "/" + info.Reason
	}
	testkit.WaitState(t, c, f.sig, after.ID, flow.StateCompleted)
	if j := testkit.WaitState(t, c, f.sig, fail.ID, flow.StateArchived); j.Reason != "sticky_unavailable" {
		t.Fatalf("FailAfter job archived with reason %q, want sticky_unavailable", j.Reason)
	}
	if s := state(wait.ID); s != "available/" {
		t.Fatalf("Wait job is %s, want still available for B", s)
	}
	if _, err := c.Enqueue(ctx, render{}, sticky.To("no spaces", sticky.Wait())); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("bad worker name: %v", err)
	}
	if _, err := c.Enqueue(ctx, render{}, sticky.To("b", sticky.After(0))); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("zero delay: %v", err)
	}
	if _, err := c.Enqueue(ctx, render{}, flow.WithPreferredWorker("b", "wait", time.Second)); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("a delay for wait, which has none: %v", err)
	}
}

// TestPreferenceSurvivesRedrive: a pinned job archived and redriven goes
// back to its worker, not to others.
func TestPreferenceSurvivesRedrive(t *testing.T) {
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	f := newFleet(t)
	var skipped atomic.Bool
	f.onB = func(*flow.Job[render]) error {
		if skipped.CompareAndSwap(false, true) {
			return flow.Skip("first time")
		}
		return nil
	}
	c, _ := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	ctx := context.Background()
	res, err := c.Enqueue(ctx, render{Pinned: true}, sticky.To("worker-b", sticky.Wait()))
	if err != nil {
		t.Fatal(err)
	}
	start(t, rdb, f, ns, "worker-b", runtime.Options{})
	start(t, rdb, f, ns, "worker-a", runtime.Options{})
	testkit.WaitState(t, c, f.sig, res.ID, flow.StateArchived)
	if _, err := admin.New(c).Redrive(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, c, f.sig, res.ID, flow.StateCompleted)
	if f.pinnedByB.Load() != 2 || f.pinnedByOthers.Load() != 0 {
		t.Fatalf("B ran %d, others %d", f.pinnedByB.Load(), f.pinnedByOthers.Load())
	}
}

// TestReroute: an operator moves a pinned job from an absent worker to
// another (live: one that is not is refused), and unpins one; the old
// worker's stale entry is skipped.
func TestReroute(t *testing.T) {
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	f := newFleet(t)
	c, _ := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	ctx := context.Background()
	moved, _ := c.Enqueue(ctx, render{Pinned: true, I: 1}, sticky.To("worker-old", sticky.Wait()))
	unpinned, _ := c.Enqueue(ctx, render{Pinned: false, I: 2}, sticky.To("worker-old", sticky.Wait()))
	// a route with no fallback to a worker that is not live would strand
	// the job: refused, the job untouched
	if err := admin.New(c).Reroute(ctx, moved.ID, sticky.To("worker-b", sticky.Wait())); !errors.Is(err, admin.ErrWorkerNotFound) || !sluicetype.IsNotFound(err) {
		t.Fatalf("reroute to a worker that is not live: %v, want ErrWorkerNotFound", err)
	}
	start(t, rdb, f, ns, "worker-b", runtime.Options{})
	testkit.Until(t, &f.sig.Renewed, nil, "worker-b registered", func() (bool, string) {
		ws, err := admin.New(c).Workers(ctx)
		return err == nil && len(ws) == 1, fmt.Sprint(ws, err)
	})
	if err := admin.New(c).Reroute(ctx, moved.ID, sticky.To("worker-b", sticky.Wait())); err != nil {
		t.Fatal(err)
	}
	if err := admin.New(c).Reroute(ctx, unpinned.ID, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.New(c).Reroute(ctx, "default:0:nope", nil); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("reroute of a missing job: %v", err)
	}
	start(t, rdb, f, ns, "worker-old", runtime.Options{})
	f.settledUntil(t, "both jobs", func() bool { return f.pinnedByB.Load() == 1 && f.free.Load() == 1 })
	if f.pinnedByOthers.Load() != 0 {
		t.Fatalf("the old worker ran the rerouted job")
	}
}
