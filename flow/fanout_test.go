package flow_test

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
	"github.com/sluicehq/sluice/runtime"
)

type parentJob struct {
	N      int
	Fail   int // index of a child that fails (-1: none)
	Policy flow.JoinPolicy
}

func (parentJob) Kind() string { return "parent" }

type childJob struct {
	I    int
	Fail bool
}

func (childJob) Kind() string { return "child" }

// fanOutRegistry: a parent spawns N children that square their index and
// joins on their results; its result is the sum, or the failure it saw.
func fanOutRegistry(t *testing.T, parentRuns *atomic.Int64) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	err := flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[childJob]) (int, error) {
		if job.Args.Fail {
			return 0, flow.Skip("injected child failure")
		}
		return job.Args.I * job.Args.I, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[parentJob]) (string, error) {
		parentRuns.Add(1)
		items := make([]flow.Item, job.Args.N)
		for i := range items {
			items[i] = flow.Item{Args: childJob{I: i, Fail: i == job.Args.Fail}}
		}
		kids, err := flow.Spawn(ctx, "spawn", items...)
		if err != nil {
			return "", err
		}
		res, err := flow.Join[int](ctx, kids, job.Args.Policy)
		var failed *flow.ChildFailedError
		if errors.As(err, &failed) {
			return "failed fast: " + failed.State, nil
		}
		if err != nil {
			return "", err
		}
		sum, failures := 0, 0
		for _, r := range res {
			sum += r.Result
			if r.State != flow.StateCompleted {
				failures++
			}
		}
		return fmt.Sprintf("sum %d failures %d", sum, failures), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestFanOut: a parent spawns children, is suspended without holding a
// worker, and joins on their results under both policies, on one Redis
// (children in the parent's partition) and on a cluster with partitioned
// queues (notifications relayed through the outbox).
func TestFanOut(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args parentJob
		want string
	}{
		{"collect all", parentJob{N: 200, Fail: -1}, "sum 2646700 failures 0"},
		{"1,000 children, collect all with a failure", parentJob{N: 1000, Fail: 7, Policy: flow.CollectAll}, "sum 332833451 failures 1"},
		{"1,000 children, fail fast", parentJob{N: 1000, Fail: 7, Policy: flow.FailFast}, "failed fast: archived"},
	}
	for _, backend := range []string{"redis", "cluster"} {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var rdb redis.UniversalClient
				parts := map[string]int{}
				if backend == "redis" {
					rdb = env.Server.Client()
				} else {
					rdb = env.Cluster.Client()
					parts["default"] = 4
				}
				t.Cleanup(func() { rdb.Close() })
				var runs atomic.Int64
				reg := fanOutRegistry(t, &runs)
				ns := redistest.NewNamespace(t)
				c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
				if err != nil {
					t.Fatal(err)
				}
				// Concurrency 1: the parent must give up its slot while it waits.
				w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Partitions: parts, Concurrency: 1}, nil)
				res, err := c.Enqueue(context.Background(), tc.args)
				if err != nil {
					t.Fatal(err)
				}
				info := testkit.WaitState(t, c, w.Sig, res.ID, flow.StateCompleted)
				var got string
				if err := info.DecodeResult(&got); err != nil || got != tc.want {
					t.Fatalf("parent result %q (%v), want %q", got, err, tc.want)
				}
				if info.Attempt != 0 || info.CrashAttempt != 0 {
					t.Fatalf("waiting spent attempts: %+v", info)
				}
				if runs.Load() < 2 {
					t.Fatalf("parent ran %d times; it should have been suspended and resumed", runs.Load())
				}
			})
		}
	}
}

type uniqueParent struct{}

func (uniqueParent) Kind() string { return "unique-parent" }

// TestSpawnRefusesUniqueChildren: a child with a unique key is refused
// (ErrInvalid) before anything is enqueued. Before, a child whose key was
// held (here by its twin) was not added, yet Spawn returned its ID and
// Join waited for it for ever.
func TestSpawnRefusesUniqueChildren(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	spawned := make(chan error, 1)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[childJob]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[uniqueParent]) error {
		twin := flow.Item{Args: childJob{I: 1}, Opts: []flow.EnqueueOption{flow.WithUniqueArgs(time.Hour, flow.KeepExisting)}}
		_, err := flow.Spawn(ctx, "twins", twin, twin)
		spawned <- err
		return flow.Skip("done")
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	res, err := c.Enqueue(context.Background(), uniqueParent{})
	testkit.Must(t, err)
	if err := <-spawned; !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("Spawn of unique children: %v, want ErrInvalid", err)
	}
	testkit.WaitState(t, c, w.Sig, res.ID, flow.StateArchived)
	stats, err := admin.New(c).QueueStats(context.Background(), "default", time.Minute)
	testkit.Must(t, err)
	for state, n := range stats.Depth {
		if want := int64(map[string]int{flow.StateArchived: 1}[state]); n != want {
			t.Errorf("%d %s jobs, want %d (the parent alone): %v", n, state, want, stats.Depth)
		}
	}
}
