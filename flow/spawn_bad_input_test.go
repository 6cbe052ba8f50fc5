package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type bigSpawnParent struct{ N int }

func (bigSpawnParent) Kind() string { return "big_spawn_parent" }

type spawnKid struct{ I int }

func (spawnKid) Kind() string { return "spawn_kid" }

// TestSpawnManyChildrenLost: a step spawns some thousands of children
// (names at their documented maxima: a 64-byte queue, a 128-byte parent
// ID, a 100-byte step name). Spawn adds every child, then fails to
// checkpoint their ID list (over step.MaxResult) and the parent is parked:
// the children stay, orphaned, running for a parent that will never join
// them. Either the spawn is refused before anything is written, or it
// succeeds.
func TestSpawnManyChildrenLost(t *testing.T) {
	rdb := realRedis(t)
	kidQueue := strings.Repeat("k", 64)
	step := strings.Repeat("s", 100)
	reg := flow.NewRegistry()
	spawnErr := make(chan error, 10)
	_ = flow.Register(reg, func(context.Context, *flow.Job[spawnKid]) error { return nil })
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[bigSpawnParent]) error {
		items := make([]flow.Item, job.Args.N)
		for i := range items {
			items[i] = flow.Item{Args: spawnKid{I: i}, Opts: []flow.EnqueueOption{flow.WithQueue(kidQueue)}}
		}
		_, err := flow.Spawn(ctx, step, items...)
		spawnErr <- err
		return err
	})
	c, ns := newClient(t, rdb, reg)
	ctx := context.Background()
	parent, err := c.Enqueue(ctx, bigSpawnParent{N: 4000}, flow.WithID(strings.Repeat("p", flow.MaxIDLength)), flow.WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	// the worker serves the parent's queue only: the children stay put
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	err = testkit.Recv(t, spawnErr, "the parent's Spawn")
	if err == nil {
		return
	}
	if !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("Spawn of 4000 children: %v, want ErrInvalid (too many for the step's checkpoint)", err)
	}
	n, _ := rdb.Eval(ctx, `return #redis.call('KEYS', ARGV[1])`, nil, "{"+ns+":"+kidQueue+":*:j:*").Int()
	if n > 0 {
		j, _ := c.Job(ctx, parent.ID)
		state := ""
		if j != nil {
			state = j.State + " " + j.Reason
		}
		t.Fatalf("Spawn of 4000 children failed (%v), parent now %q, yet %d children were added and are left orphaned", err, state, n)
	}
}

type mixedSpawnParent struct{}

func (mixedSpawnParent) Kind() string { return "mixed_spawn_parent" }

// TestSpawnBadChildRegistersQueue: Spawn whose second child is bad
// input (a priority out of range) fails with ErrInvalid; the client's
// EnqueueMany writes nothing for bad input ("bad input registers no
// queue"), but Spawn has already registered the first child's queue in
// the namespace's registry before it drafts the second child.
func TestSpawnBadChildRegistersQueue(t *testing.T) {
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	spawnErr := make(chan error, 10)
	_ = flow.Register(reg, func(context.Context, *flow.Job[spawnKid]) error { return nil })
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[mixedSpawnParent]) error {
		_, err := flow.Spawn(ctx, "spawn",
			flow.Item{Args: spawnKid{I: 0}, Opts: []flow.EnqueueOption{flow.WithQueue("fresh_q")}},
			flow.Item{Args: spawnKid{I: 1}, Opts: []flow.EnqueueOption{flow.WithPriority(99)}})
		spawnErr <- err
		return err
	})
	c, ns := newClient(t, rdb, reg)
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, mixedSpawnParent{}, flow.WithMaxAttempts(1)); err != nil {
		t.Fatal(err)
	}
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	err := testkit.Recv(t, spawnErr, "the parent's Spawn")
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("Spawn with a bad child: %v, want ErrInvalid", err)
	}
	if ok, _ := rdb.HExists(ctx, "{"+ns+":queues}", "fresh_q").Result(); ok {
		t.Fatalf("Spawn refused its items as bad input (%v), yet registered queue fresh_q of its first child in %s", err, "{"+ns+":queues}")
	}
}

type ratedSpawnParent struct{}

func (ratedSpawnParent) Kind() string { return "rated_spawn_parent" }

// TestSpawnMalformedCalledConflict: a child whose rate class's bucket
// key holds another type is refused by the store as ErrMalformed
// (docs/errors.md: "for that job alone in a batch ... ErrMalformed"); Spawn
// reports it as a *sluicetype.ConflictError ("did the step's items
// change?"), which is ErrConflict and not ErrMalformed.
func TestSpawnMalformedCalledConflict(t *testing.T) {
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	spawnErr := make(chan error, 10)
	_ = flow.Register(reg, func(context.Context, *flow.Job[spawnKid]) error { return nil })
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[ratedSpawnParent]) error {
		_, err := flow.Spawn(ctx, "spawn", flow.Item{Args: spawnKid{I: 0}, Opts: []flow.EnqueueOption{
			flow.WithQueue("rated"), flow.WithRateLimit("bad", flow.RateLimit{Jobs: 1, Per: time.Second})}})
		spawnErr <- err
		return err
	})
	c, ns := newClient(t, rdb, reg)
	ctx := context.Background()
	if err := rdb.Set(ctx, "{"+ns+":rated:0}:rl:bad", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, ratedSpawnParent{}, flow.WithMaxAttempts(1)); err != nil {
		t.Fatal(err)
	}
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	err := testkit.Recv(t, spawnErr, "the parent's Spawn")
	if !errors.Is(err, flow.ErrMalformed) || errors.Is(err, flow.ErrConflict) {
		t.Fatalf("Spawn of a child whose rate bucket key holds a string: %v; want ErrMalformed, not a conflict", err)
	}
}
