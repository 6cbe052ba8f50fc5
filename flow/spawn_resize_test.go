package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

type shrinkParent struct{}

func (shrinkParent) Kind() string { return "shrink-parent" }

type shrinkKid struct{ N int }

func (shrinkKid) Kind() string { return "shrink-kid" }

// TestSpawnAcrossShrink: a worker read the layout of its children's
// queue (3 partitions) when it started; the queue is then paused and
// shrunk to 2. A parent spawns 12 children: those placed on partition 2,
// which went away, are refused there, and go where the new count places
// them in the same step, the others staying where they were added. Each
// child is added once. Before, the step failed, and ran again placed every
// child by the new count: children already added to partition 0 or 1 were
// added a second time to the other (16 jobs for 12 children).
func TestSpawnAcrossShrink(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	const kids = 12
	spawned := make(chan []string, 4)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[shrinkKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[shrinkParent]) error {
		items := make([]flow.Item, kids)
		for i := range items {
			items[i] = flow.Item{Args: shrinkKid{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}}
		}
		c, err := flow.Spawn(ctx, "fan", items...)
		if err != nil {
			return err
		}
		spawned <- c.IDs
		return nil
	}))
	three, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: map[string]int{"kids": 3}})
	testkit.Must(t, err)
	r, err := three.Enqueue(ctx, shrinkKid{N: -1}, flow.WithQueue("kids")) // registers kids with 3 partitions
	testkit.Must(t, err)
	testkit.Must(t, admin.New(three).DeleteJob(ctx, r.ID))

	sig := testsignal.NewWorker()
	idle := sig.Idle.Subscribe()
	defer idle.Close()
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1}, Concurrency: 2,
		Backoff: func(int) time.Duration { return time.Millisecond }}, sig)
	idle.WaitFor(t, func(testsignal.Idle) bool { return true }) // started: it has read every layout

	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	testkit.Must(t, adm.PauseQueue(ctx, "kids"))
	testkit.Must(t, adm.ResizeQueue(ctx, "kids", 2))
	_, err = c.Enqueue(ctx, shrinkParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	ids := testkit.Recv(t, spawned, "the spawn step")

	st, err := adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var total int64
	for _, n := range st.Depth {
		total += n
	}
	if total != kids {
		t.Errorf("queue kids holds %d jobs after a Spawn of %d children (%v): children added twice", total, kids, st.Depth)
	}
	for _, id := range ids {
		if _, err := c.Job(ctx, id); err != nil {
			t.Errorf("child %s, as the spawn names it: %v", id, err)
		}
	}
}
