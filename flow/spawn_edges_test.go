package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type edgeSpawnParent struct{ Case int }

func (edgeSpawnParent) Kind() string { return "edge_spawn_parent" }

// TestSpawnEdges (found by an audit):
//   - a fan-out of no items joins at once with no results: Join sent Redis
//     an HMGET of no fields, and its raw error ended the parent archived;
//   - Join of nil children is ErrInvalid, where it panicked (counted a
//     crash);
//   - WithID on a spawned child is ErrInvalid, nothing spawned: the child's
//     ID derives from its parent, step and index (what makes a step run
//     again idempotent), and the caller's ID was dropped without a word.
func TestSpawnEdges(t *testing.T) {
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	type outcome struct {
		n   int
		err error
	}
	out := make(chan outcome, 10)
	_ = flow.Register(reg, func(context.Context, *flow.Job[spawnKid]) error { return nil })
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[edgeSpawnParent]) error {
		var (
			res []flow.ChildResult[struct{}]
			err error
		)
		switch job.Args.Case {
		case 0:
			var kids *flow.Children
			if kids, err = flow.Spawn(ctx, "none"); err == nil {
				res, err = flow.Join[struct{}](ctx, kids, flow.CollectAll)
			}
		case 1:
			res, err = flow.Join[struct{}](ctx, nil, flow.CollectAll)
		case 2:
			_, err = flow.Spawn(ctx, "named", flow.Item{Args: spawnKid{I: 1}, Opts: []flow.EnqueueOption{flow.WithID("order-42")}})
		}
		out <- outcome{len(res), err}
		return err
	})
	c, ns := newClient(t, rdb, reg)
	ctx := context.Background()
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	for i, want := range []error{nil, flow.ErrInvalid, flow.ErrInvalid} {
		res, err := c.Enqueue(ctx, edgeSpawnParent{Case: i}, flow.WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		got := testkit.Recv(t, out, "the parent's outcome")
		if !errors.Is(got.err, want) || (want == nil && got.n != 0) {
			t.Errorf("case %d: %d results, %v; want none, %v", i, got.n, got.err, want)
		}
		if want == nil {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			j, err := c.Wait(wctx, res.ID)
			cancel()
			if err != nil || j.State != flow.StateCompleted {
				t.Errorf("case %d: parent %+v, %v; want completed", i, j, err)
			}
		}
	}
	if n, _ := rdb.Keys(ctx, "{"+ns+":default:*}:j:*order-42*").Result(); len(n) != 0 {
		t.Errorf("a child was spawned under the refused ID: %v", n)
	}
}

// TestEnqueueManyBadSentAsRegistersNoQueue: an EnqueueMany refused for a
// SentAs that names a partition its queue lacks (ErrInvalid: "nothing
// was written") registered the queues of the items placed before it
// (found by an audit; Spawn had the same fixed before).
func TestEnqueueManyBadSentAsRegistersNoQueue(t *testing.T) {
	rdb := realRedis(t)
	c, ns := newClient(t, rdb, nil)
	ctx := context.Background()
	if _, err := c.Enqueue(ctx, email{To: "a"}); err != nil { // registers default, 1 partition
		t.Fatal(err)
	}
	res, err := c.EnqueueMany(ctx,
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithQueue("fresh_q")}},
		flow.Item{Args: email{To: "c"}, Opts: []flow.EnqueueOption{flow.SentAs("default:3:x")}})
	if !errors.Is(err, flow.ErrInvalid) || res != nil {
		t.Fatalf("EnqueueMany with a SentAs of a partition the queue lacks: %v, %v; want ErrInvalid", res, err)
	}
	if ok, _ := rdb.HExists(ctx, "{"+ns+":queues}", "fresh_q").Result(); ok {
		t.Fatal("the refused call registered queue fresh_q")
	}
}
