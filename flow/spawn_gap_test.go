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

type gapParent struct{}

func (gapParent) Kind() string { return "gap-parent" }

type gapKid struct{ N int }

func (gapKid) Kind() string { return "gap-kid" }

// TestSpawnRetriedStaleLowerCountAfterShrinkAndGrowth: attempt 1 adds the children by count 4 (on a worker since
// stopped) and its checkpoint is lost (deleted here); they run (deleted:
// only their markers stay). kids shrinks to
// 2 (2 and 3 retired). Worker A, started now, reads kids at 2 and keeps
// it (it does not serve kids). kids grows to 3 (2 taken back) and is
// resumed, which deletes partition 2's flag. Attempt 2 on A: placedBefore
// reads the registry's count (3) and the partitions past it, and finds
// the children on 2 and 3. A review found a version of it that read
// PartitionsBeyond(2) from A's count, which stops at partition 2 (no
// flag) and never sees 3: children placed on 2 or 3 were added and ran
// again.
func TestSpawnRetriedStaleLowerCountAfterShrinkAndGrowth(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	const kids = 8
	reg := flow.NewRegistry()
	spawned := make(chan []string, 4)
	planted := make(chan []string, 4)
	items := make([]flow.Item, kids)
	for i := range items {
		items[i] = flow.Item{Args: gapKid{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}}
	}
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[gapKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, j *flow.Job[gapParent]) error {
		ch, err := flow.Spawn(ctx, "fan", items...)
		if err != nil {
			return err
		}
		if j.Attempt == 0 {
			planted <- ch.IDs
			return errors.New("fails after the spawn")
		}
		spawned <- ch.IDs
		return nil
	}))
	c4, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: map[string]int{"kids": 4}})
	testkit.Must(t, err)
	r, err := c4.Enqueue(ctx, gapKid{N: -1}, flow.WithQueue("kids")) // registers kids with 4 partitions
	testkit.Must(t, err)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	testkit.Must(t, adm.DeleteJob(ctx, r.ID))

	opts := runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1}, Concurrency: 1,
		Backoff: func(int) time.Duration { return time.Hour }}
	w0 := testkit.StartWorker(t, rdb, reg, opts, nil)
	parent, err := c.Enqueue(ctx, gapParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	ids := testkit.Recv(t, planted, "attempt 1")
	t.Logf("attempt 1 placed %v", ids)
	waitDepth(t, adm, "parents", "retryable", 1)
	w0.Cancel()
	<-w0.Done()
	wk := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Queues: map[string]int{"kids": 4}, Concurrency: 4}, nil)
	waitDepth(t, adm, "kids", "completed", kids) // they ran
	_, err = adm.DeleteSelected(ctx, admin.Selector{Queue: "kids", State: flow.StateCompleted}, admin.DeleteOptions{})
	testkit.Must(t, err)
	// stands for a run of the step that died short of its checkpoint
	pref, _ := keys.ParseRef(ns, parent.ID)
	testkit.Must(t, rdb.Del(ctx, pref.Partition.Steps(pref.Local)).Err())
	// their ends, told to the parent through kids' outboxes, are relayed
	// by wk: no worker serves kids after it, and a partition the resize
	// takes away must hold none
	waitRelayed(t, rdb, ns, "kids", 4)
	wk.Cancel()
	<-wk.Done()

	resize := func(n int) {
		t.Helper()
		testkit.Must(t, adm.PauseQueue(ctx, "kids"))
		resizeOnceEmpty(t, adm, "kids", n)
		testkit.Must(t, adm.ResumeQueue(ctx, "kids"))
	}
	resize(2)
	testkit.StartWorker(t, rdb, reg, opts, nil) // A: reads kids at 2 and keeps it
	_, err = c.Enqueue(ctx, gapKid{N: -2}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	waitDepth(t, adm, "parents", "completed", 1) // A's Run has read the registry
	resize(3)

	testkit.Must(t, adm.RunNow(ctx, parent.ID))
	again := testkit.Recv(t, spawned, "the spawn step, run again on A")

	st, err := adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var total int64
	for state, n := range st.Depth {
		_ = state
		total += n
	}
	if total != 0 {
		t.Errorf("queue kids holds %d jobs (%v) after the spawn ran again on a process on the count 2 (kids now 3, partition 3 retired): children that ran were added again (ids %v)",
			total, st.Depth, again)
	}
}
