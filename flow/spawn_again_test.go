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
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type spawnAgainParent struct{}

func (spawnAgainParent) Kind() string { return "spawn-again-parent" }

type spawnAgainChild struct{}

func (spawnAgainChild) Kind() string { return "spawn-again-child" }

// failOneStep is a go-redis hook that fails the first step checkpoint
// call before it reaches Redis, as a connection cut (or a crash) right
// after a step's function ran would.
type failOneStep struct{ fired atomic.Bool }

func (*failOneStep) DialHook(next redis.DialHook) redis.DialHook { return next }
func (*failOneStep) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (f *failOneStep) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) >= 2 && lua.Step.Is(cmd.Name(), fmt.Sprint(args[1])) && f.fired.CompareAndSwap(false, true) {
			cmd.SetErr(testkit.ErrInjected)
			return testkit.ErrInjected
		}
		return next(ctx, cmd)
	}
}

// spawnAgainRegistry: a parent spawns one child and joins it; kids counts
// the child's runs, ids receives the child IDs each Spawn returned, done
// the parent's successful joins.
func spawnAgainRegistry(t *testing.T, kids *atomic.Int64, ids chan<- string, done chan<- struct{}) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[spawnAgainChild]) error {
		kids.Add(1) // say, charges a card
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[spawnAgainParent]) error {
		c, err := flow.Spawn(ctx, "charge", flow.Item{Args: spawnAgainChild{}})
		if err != nil {
			return err
		}
		ids <- c.IDs[0]
		if _, err := flow.Join[struct{}](ctx, c, flow.CollectAll); err != nil {
			return err
		}
		done <- struct{}{}
		return nil
	}))
	return reg
}

// TestSpawnAgainAfterChildDeleted: a Spawn step whose checkpoint was lost
// (the connection cut after the children were enqueued) runs again on
// the parent's next attempt, by which time its child has finished and
// been deleted (completed jobs discarded). The child must not be added,
// nor run, a second time: its enqueue is remembered.
func TestSpawnAgainAfterChildDeleted(t *testing.T) {
	t.Parallel()
	rdb, wrdb := env.Server.Client(), env.Server.Client()
	t.Cleanup(func() { rdb.Close(); wrdb.Close() })
	hook := &failOneStep{}
	wrdb.AddHook(hook)
	ns := redistest.NewNamespace(t)
	var kids atomic.Int64
	ids, done := make(chan string, 8), make(chan struct{}, 8)
	reg := spawnAgainRegistry(t, &kids, ids, done)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	// the child, discarded once done, finishes before the parent's retry
	testkit.StartWorker(t, wrdb, reg, runtime.Options{Namespace: ns, Concurrency: 2, DiscardCompleted: true,
		Backoff: func(int) time.Duration { return 300 * time.Millisecond }}, nil)
	_, err = c.Enqueue(context.Background(), spawnAgainParent{})
	testkit.Must(t, err)
	testkit.Recv(t, done, "the parent's join")
	if !hook.fired.Load() {
		t.Fatal("the step checkpoint was never failed: the test proves nothing")
	}
	// the first run's Spawn failed (its checkpoint did): only the run
	// again returned the child's ID
	id := testkit.Recv(t, ids, "the spawn run again")
	if _, err := c.Job(context.Background(), id); !errors.Is(err, flow.ErrNotFound) {
		t.Errorf("child %s was enqueued again by the spawn run again (Job: %v)", id, err)
	}
	if n := kids.Load(); n != 1 {
		t.Errorf("the one child ran %d times", n)
	}
}

// TestSpawnUnderReusedParentID: a parent enqueued again under the ID of a
// deleted one (WithID) spawns children of its own. Were they named after
// the parent's ID alone, its Spawn would meet the old parent's children,
// which finished long ago and never notify the new one: its Join would
// wait for ever.
func TestSpawnUnderReusedParentID(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	var kids atomic.Int64
	ids, done := make(chan string, 8), make(chan struct{}, 8)
	reg := spawnAgainRegistry(t, &kids, ids, done)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	ctx := context.Background()
	res, err := c.Enqueue(ctx, spawnAgainParent{}, flow.WithID("order-42"))
	testkit.Must(t, err)
	testkit.WaitState(t, c, w.Sig, res.ID, flow.StateCompleted)
	testkit.Must(t, admin.New(c).DeleteJob(ctx, res.ID)) // its child stays, kept as long as its own retention
	res, err = c.Enqueue(ctx, spawnAgainParent{}, flow.WithID("order-42"))
	testkit.Must(t, err)
	if res.Duplicate {
		t.Fatal("the parent's second enqueue was answered as a duplicate")
	}
	testkit.WaitState(t, c, w.Sig, res.ID, flow.StateCompleted)
	// each parent sent its child's ID from each run (the one that spawned,
	// the one its child's end woke)
	named := map[string]bool{}
	for len(ids) > 0 {
		named[<-ids] = true
	}
	if len(named) != 2 {
		t.Errorf("the two parents named %d children: %v", len(named), named)
	}
	if n := kids.Load(); n != 2 {
		t.Errorf("the children ran %d times, want once each", n)
	}
}
