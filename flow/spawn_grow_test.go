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

type growParent struct{}

func (growParent) Kind() string { return "grow-parent" }

type growKid struct{ N int }

func (growKid) Kind() string { return "grow-kid" }

// TestSpawnRetriedAcrossGrowth: a Spawn step whose first run added some
// children and then failed (here: one child's ID conflicts) runs again
// after the children's queue grew from 2 to 4 partitions. The children
// the first run added stay where they are, each added once: a helper's
// audit found the rerun placed them all by the new count, so that those
// the new count put elsewhere were added a second time.
func TestSpawnRetriedAcrossGrowth(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	const kids = 12
	reg := flow.NewRegistry()
	var c *flow.Client
	planted := make(chan string, 4)
	spawned := make(chan []string, 4)
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[growKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, j *flow.Job[growParent]) error {
		ref, ok := keys.ParseRef(ns, j.ID)
		if !ok {
			t.Errorf("parent ID %q", j.ID)
		}
		if j.Attempt == 0 {
			// a job holding child 0's ID with other arguments: the spawn's
			// enqueue of child 0 is refused (Conflicted), the others added
			local := keys.ChildLocal(ref.Local, j.Created, "fan", 0)
			r, err := c.Enqueue(ctx, growKid{N: 999}, flow.WithQueue("kids"), flow.WithID(local))
			if err != nil {
				t.Errorf("planting: %v", err)
			}
			planted <- r.ID
		}
		items := make([]flow.Item, kids)
		for i := range items {
			items[i] = flow.Item{Args: growKid{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("kids")}}
		}
		ch, err := flow.Spawn(ctx, "fan", items...)
		if err != nil {
			return err
		}
		spawned <- ch.IDs
		return nil
	}))
	var err error
	c0, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: map[string]int{"kids": 2}})
	testkit.Must(t, err)
	r, err := c0.Enqueue(ctx, growKid{N: -1}, flow.WithQueue("kids")) // registers kids with 2 partitions
	testkit.Must(t, err)
	c, err = flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	testkit.Must(t, adm.DeleteJob(ctx, r.ID))

	opts := runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1}, Concurrency: 1,
		Backoff: func(int) time.Duration { return 2 * time.Second }}
	w1 := testkit.StartWorker(t, rdb, reg, opts, nil)
	_, err = c.Enqueue(ctx, growParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	conflict := testkit.Recv(t, planted, "attempt 1")
	// attempt 1 fails in its spawn; stop its worker (a redeploy)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := adm.QueueStats(ctx, "parents", 0)
		testkit.Must(t, err)
		if st.Depth["retryable"] == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	w1.Cancel()
	<-w1.Done()

	st, err := adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var before int64
	for _, n := range st.Depth {
		before += n
	}
	if before < 2 || before > kids {
		t.Fatalf("after the failed spawn: kids holds %d jobs (%v); want some children added, and the planted one", before, st.Depth)
	}

	testkit.Must(t, adm.DeleteJob(ctx, conflict))
	testkit.Must(t, adm.PauseQueue(ctx, "kids"))
	testkit.Must(t, adm.ResizeQueue(ctx, "kids", 4))
	testkit.Must(t, adm.ResumeQueue(ctx, "kids"))

	testkit.StartWorker(t, rdb, reg, opts, nil)
	ids := testkit.Recv(t, spawned, "the spawn step, run again")

	st, err = adm.QueueStats(ctx, "kids", 0)
	testkit.Must(t, err)
	var total int64
	for _, n := range st.Depth {
		total += n
	}
	if total != kids {
		t.Errorf("queue kids holds %d jobs after a Spawn of %d children (%v): children added twice", total, kids, st.Depth)
	}
	// the same child (one local ID) held by two partitions
	for _, id := range ids {
		ref, _ := keys.ParseRef(ns, id)
		var held []int
		for p := 0; p < 4; p++ {
			other := keys.Ref{Partition: keys.Partition{NS: ref.Partition.NS, Queue: "kids", Index: p}, Local: ref.Local}
			if _, err := c.Job(ctx, other.String()); err == nil {
				held = append(held, p)
			} else if !errors.Is(err, flow.ErrNotFound) {
				t.Errorf("child %s: %v", other, err)
			}
		}
		if len(held) > 1 {
			t.Errorf("child %s is a job in partitions %v of kids", ref.Local, held)
		}
	}
}
