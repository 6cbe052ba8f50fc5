package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type shrinkRetryParent struct{}

func (shrinkRetryParent) Kind() string { return "shrink-retry-parent" }

type shrinkRetryKid struct{ N int }

func (shrinkRetryKid) Kind() string { return "shrink-retry-kid" }

// TestSpawnRetriedAcrossShrink: a Spawn step's first run adds
// children to the 4 partitions of their queue and fails (child 0's ID is
// held by another job). The children run and finish, their finished jobs
// are deleted, and the queue is shrunk to 2 (partitions 2 and 3 are empty,
// as the shrink requires). The step runs again: each child is
// "remembered for seven days" (its follow-up marker) in the partition it
// was added to, and none is added again. A helper's audit found
// placedBefore probed only the partitions of the new layout: the children
// the first run added to partitions 2 and 3 were added again (and ran a
// second time) on partitions 0 and 1.
//
// Run again by the same worker ("stale count": it serves "parents", not
// "kids", and keeps the count 4 of kids it read, as a producer of kids
// that was not restarted), the children it places on partitions 2 and 3
// are refused there (retired); before they are placed again by the new
// count 2, the refusal path looks for them where the new layout and the
// earlier ones put them, and keeps as added those found on a retired
// partition. A review found them added, and run, a second time.
func TestSpawnRetriedAcrossShrink(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		name := "new worker"
		if stale {
			name = "stale count"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spawnRetriedAcrossShrink(t, stale)
		})
	}
}

func spawnRetriedAcrossShrink(t *testing.T, stale bool) {
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	const kids = 12
	reg := flow.NewRegistry()
	var c *flow.Client
	planted := make(chan string, 4)
	spawned := make(chan []string, 4)
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[shrinkRetryKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, j *flow.Job[shrinkRetryParent]) error {
		ref, _ := keys.ParseRef(ns, j.ID)
		if j.Attempt == 0 {
			local := keys.ChildLocal(ref.Local, j.Created, "fan", 0)
			r, err := c.Enqueue(ctx, shrinkRetryKid{N: 999}, flow.WithQueue("kids"), flow.WithID(local))
			if err != nil {
				t.Errorf("planting: %v", err)
			}
			planted <- r.ID
		}
		items := make([]flow.Item, kids)
		for i := range items {
			items[i] = flow.Item{Args: shrinkRetryKid{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}}
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
	r, err := c0.Enqueue(ctx, shrinkRetryKid{N: -1}, flow.WithQueue("kids")) // registers kids with 4 partitions
	testkit.Must(t, err)
	c, err = flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	testkit.Must(t, adm.DeleteJob(ctx, r.ID))

	opts := runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1}, Concurrency: 1,
		Backoff: func(int) time.Duration { return time.Hour }}
	w1 := testkit.StartWorker(t, rdb, reg, opts, nil) // with stale: runs both attempts of the parent
	parent, err := c.Enqueue(ctx, shrinkRetryParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	testkit.Recv(t, planted, "attempt 1")
	waitDepth(t, adm, "parents", "retryable", 1)
	if !stale {
		w1.Cancel()
		<-w1.Done()
	}

	// the children (and the planted job) run and finish; their finished
	// jobs are deleted, so partitions 2 and 3 of kids end up empty
	wk := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Queues: map[string]int{"kids": 2}, Concurrency: 4}, nil)
	waitDepth(t, adm, "kids", "completed", kids) // 11 children and the planted job
	_, err = adm.DeleteSelected(ctx, admin.Selector{Queue: "kids", State: flow.StateCompleted}, admin.DeleteOptions{})
	testkit.Must(t, err)
	testkit.Must(t, adm.PauseQueue(ctx, "kids"))
	resizeOnceEmpty(t, adm, "kids", 2)
	wk.Cancel()
	<-wk.Done()
	testkit.Must(t, adm.ResumeQueue(ctx, "kids"))

	// attempt 2 of the parent runs the spawn step again: by a new worker,
	// or by the one that still has kids at 4
	if !stale {
		testkit.StartWorker(t, rdb, reg, opts, nil)
	}
	testkit.Must(t, adm.RunNow(ctx, parent.ID))
	ids := testkit.Recv(t, spawned, "the spawn step, run again")

	st, err := adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var total int64
	for _, n := range st.Depth {
		total += n
	}
	// only child 0 (refused in attempt 1) is new; every other child ran
	// and finished before
	if total != 1 {
		var again []string
		for i, id := range ids {
			if _, err := c.Job(ctx, id); err == nil && i != 0 {
				again = append(again, id)
			}
		}
		t.Errorf("queue kids holds %d jobs after the spawn ran again (stale count %v; %v); want only child 0: children added (and run) a second time: %v",
			total, stale, st.Depth, again)
	}
}
