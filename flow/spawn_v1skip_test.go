package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type v1SkipParent struct{}

func (v1SkipParent) Kind() string { return "v1skip-parent" }

type v1SkipKid struct{ N int }

func (v1SkipKid) Kind() string { return "v1skip-kid" }

// TestSpawnRetriedByStaleV1ProcessAfterShrink:
// worker A (serves "parents", not "kids") loads kids at layout version 1,
// 4 partitions, and keeps it. kids shrinks to 3 (version 2). Attempt 1 of
// the parent stands for a run on a process that knows the count 3 (the
// children are planted by a client started after the shrink) which added
// the children and died short of the step's checkpoint. Attempt 2 runs on
// A, which places them by count 4; placedBefore reads the registry's
// layout and finds each child where count 3 put it. A review found a
// version of it that trusted A's cached layout (version 1, the routes'
// count) and skipped the search: every child count 4 put on another of
// partitions 0..2 than count 3 did was added a second time.
func TestSpawnRetriedByStaleV1ProcessAfterShrink(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	const kids = 8
	reg := flow.NewRegistry()
	spawned := make(chan []string, 4)
	var c3 *flow.Client
	items := make([]flow.Item, kids)
	for i := range items {
		items[i] = flow.Item{Args: v1SkipKid{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}}
	}
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[v1SkipKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, j *flow.Job[v1SkipParent]) error {
		if j.Attempt == 0 {
			// what a run of the step on a process on the count 3 added
			// before it died, short of the checkpoint
			ref, _ := keys.ParseRef(ns, j.ID)
			for i := range items {
				local := keys.ChildLocal(ref.Local, j.Created, "fan", i)
				if _, err := c3.Enqueue(ctx, v1SkipKid{N: i}, flow.WithQueue("kids"), flow.WithID(local)); err != nil {
					t.Errorf("planting: %v", err)
				}
			}
			return errors.New("died short of the checkpoint")
		}
		ch, err := flow.Spawn(ctx, "fan", items...)
		if err != nil {
			return err
		}
		spawned <- ch.IDs
		return nil
	}))
	c0, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: map[string]int{"kids": 4}})
	testkit.Must(t, err)
	r, err := c0.Enqueue(ctx, v1SkipKid{N: -1}, flow.WithQueue("kids")) // registers kids with 4 partitions
	testkit.Must(t, err)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	testkit.Must(t, adm.DeleteJob(ctx, r.ID))

	opts := runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1}, Concurrency: 1,
		Backoff: func(int) time.Duration { return time.Hour }}
	testkit.StartWorker(t, rdb, reg, opts, nil) // A: loads kids at version 1, count 4, and keeps it
	// the worker has read the registry (its Run has started)
	_, err = c.Enqueue(ctx, v1SkipKid{N: -2}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	waitDepth(t, adm, "parents", "completed", 1)

	testkit.Must(t, adm.PauseQueue(ctx, "kids"))
	resizeOnceEmpty(t, adm, "kids", 3)
	testkit.Must(t, adm.ResumeQueue(ctx, "kids"))
	c3, err = flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg}) // reads kids at count 3
	testkit.Must(t, err)

	parent, err := c.Enqueue(ctx, v1SkipParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	waitDepth(t, adm, "parents", "retryable", 1)
	testkit.Must(t, adm.RunNow(ctx, parent.ID))
	ids := testkit.Recv(t, spawned, "the spawn step, run again on A")

	st, err := adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var total int64
	for _, n := range st.Depth {
		total += n
	}
	if total != kids {
		t.Errorf("queue kids holds %d jobs (%v) after the spawn ran again on a process that knows kids at version 1 (count 4); want %d: children added a second time (ids %v)",
			total, st.Depth, kids, ids)
	}
}
