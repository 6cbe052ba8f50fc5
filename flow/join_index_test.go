package flow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type indexParent struct{ FailFast bool }

func (indexParent) Kind() string { return "index-parent" }

type indexChild struct {
	I    int
	Fail bool
}

func (indexChild) Kind() string { return "index-child" }

// TestJoinOfSomeChildrenIndexesBySpawn: a join of some of a step's
// children (Children{Step, IDs[1:]}) reports each child's Index as the
// position of its item in Spawn, as ChildResult and ChildFailedError
// document, not its position among the IDs joined: a parent that looks
// its item up by Index must find that child's item.
func TestJoinOfSomeChildrenIndexesBySpawn(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	type outcome struct {
		idx []int
		err error
	}
	done := make(chan outcome, 16)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[indexChild]) error {
		if job.Args.Fail {
			return flow.Skip("child fails")
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[indexParent]) error {
		items := make([]flow.Item, 3)
		for i := range items {
			items[i] = flow.Item{Args: indexChild{I: i, Fail: job.Args.FailFast && i == 2}}
		}
		kids, err := flow.Spawn(ctx, "kids", items...)
		if err != nil {
			return err
		}
		policy := flow.CollectAll
		if job.Args.FailFast {
			policy = flow.FailFast
		}
		res, err := flow.Join[struct{}](ctx, &flow.Children{Step: kids.Step, IDs: kids.IDs[1:]}, policy)
		if w := (*sluicetype.WaitingError)(nil); errors.As(err, &w) {
			return err
		}
		var o outcome
		for _, r := range res {
			o.idx = append(o.idx, r.Index)
		}
		o.err = err
		done <- o
		return nil
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 4}, nil)

	_, err = c.Enqueue(context.Background(), indexParent{})
	testkit.Must(t, err)
	o := testkit.Recv(t, done, "the join of children 1 and 2")
	if o.err != nil || len(o.idx) != 2 || o.idx[0] != 1 || o.idx[1] != 2 {
		t.Errorf("join of children 1 and 2: indexes %v (%v), want [1 2]", o.idx, o.err)
	}

	_, err = c.Enqueue(context.Background(), indexParent{FailFast: true})
	testkit.Must(t, err)
	o = testkit.Recv(t, done, "the fail-fast join of children 1 and 2")
	if cf := (*flow.ChildFailedError)(nil); !errors.As(o.err, &cf) || cf.Index != 2 {
		t.Errorf("fail-fast join of children 1 and 2: %v, want child 2's failure, Index 2", o.err)
	}
}
