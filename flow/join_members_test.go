package flow_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type membersParent struct{ FailFast bool }

func (membersParent) Kind() string { return "members-parent" }

// membersChild waits for its gate, then fails (Skip) or completes.
type membersChild struct {
	I    int
	Fail bool
}

func (membersChild) Kind() string { return "members-child" }

// joinMembersRig runs a parent that spawns three children in one step and
// joins the first two; the test opens each child's gate.
type joinMembersRig struct {
	c       *flow.Client
	parent  string
	gates   [3]chan struct{}
	runs    atomic.Int64
	kids    atomic.Pointer[[]string] // the children's IDs, once spawned
	outcome chan error
}

func newJoinMembersRig(t *testing.T, policy flow.JoinPolicy, fail [3]bool) *joinMembersRig {
	t.Helper()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	r := &joinMembersRig{outcome: make(chan error, 16)}
	for i := range r.gates {
		r.gates[i] = make(chan struct{})
	}
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[membersChild]) error {
		select {
		case <-r.gates[job.Args.I]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if job.Args.Fail {
			return flow.Skip("child fails")
		}
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[membersParent]) error {
		r.runs.Add(1)
		items := make([]flow.Item, 3)
		for i := range items {
			items[i] = flow.Item{Args: membersChild{I: i, Fail: fail[i]}}
		}
		kids, err := flow.Spawn(ctx, "kids", items...)
		if err != nil {
			return err
		}
		r.kids.Store(&kids.IDs)
		_, err = flow.Join[struct{}](ctx, &flow.Children{Step: kids.Step, IDs: kids.IDs[:2]}, policy)
		if wait := (*sluicetype.WaitingError)(nil); !errors.As(err, &wait) {
			r.outcome <- err
			return nil
		}
		return err
	}))
	var err error
	r.c, err = flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 8}, nil)
	t.Cleanup(func() {
		for _, g := range r.gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	})
	e, err := r.c.Enqueue(context.Background(), membersParent{})
	testkit.Must(t, err)
	r.parent = e.ID
	return r
}

// waitCount waits until the parent is suspended on n children of "kids".
func (r *joinMembersRig) waitCount(t *testing.T, n int) {
	t.Helper()
	redistest.Within(t, testkit.Timeout, fmt.Sprintf("the parent to wait for %d children", n), func() (bool, string) {
		j, err := r.c.Job(context.Background(), r.parent)
		if err != nil {
			return false, err.Error()
		}
		return j.State == flow.StateScheduled && j.WaitingFor == "kids" && j.WaitingCount == n,
			fmt.Sprintf("%s waiting for %q (%d), %d runs", j.State, j.WaitingFor, j.WaitingCount, r.runs.Load())
	})
}

// childDone waits until the i-th child spawned is in state.
func (r *joinMembersRig) childDone(t *testing.T, i int, state string) {
	t.Helper()
	redistest.Within(t, testkit.Timeout, fmt.Sprintf("child %d to be %s", i, state), func() (bool, string) {
		ids := r.kids.Load()
		if ids == nil {
			return false, "not spawned"
		}
		j, err := r.c.Job(context.Background(), (*ids)[i])
		if err != nil {
			return false, err.Error()
		}
		return j.State == state, j.State
	})
}

// TestJoinNotWokenByOtherChildren: a parent joins two of a step's three
// children. The third finishing does not count for it: it stays
// suspended on its two, and runs once more, when they finish. Before, the
// wait counted every child of the step: the third counted, and the first
// then woke it while the second still ran (it ran, joined and suspended
// again).
func TestJoinNotWokenByOtherChildren(t *testing.T) {
	t.Parallel()
	r := newJoinMembersRig(t, flow.CollectAll, [3]bool{})
	r.waitCount(t, 2)
	close(r.gates[2])
	r.childDone(t, 2, flow.StateCompleted)
	r.waitCount(t, 2)
	if n := r.runs.Load(); n != 1 {
		t.Fatalf("the parent ran %d times by the time the child outside its join finished, want once", n)
	}
	close(r.gates[0])
	r.waitCount(t, 1)
	close(r.gates[1])
	if err := testkit.Recv(t, r.outcome, "the join's result"); err != nil {
		t.Fatalf("join: %v, want the results", err)
	}
	if n := r.runs.Load(); n != 2 {
		t.Errorf("the parent ran %d times, want twice (spawn, then when its two children finished)", n)
	}
}

// TestFailFastJoinWokenByItsOwnFailure: a FailFast join of two of a
// step's three children, the third of which failed before the join. When
// one of the two fails, the parent wakes at once with its failure, while
// the other still runs. Before, a failure already counted outside the
// join made it wait as CollectAll would, for both.
func TestFailFastJoinWokenByItsOwnFailure(t *testing.T) {
	t.Parallel()
	r := newJoinMembersRig(t, flow.FailFast, [3]bool{true, false, true})
	close(r.gates[2])
	r.childDone(t, 2, flow.StateArchived)
	r.waitCount(t, 2)
	close(r.gates[0])
	err := testkit.Recv(t, r.outcome, "the join to fail fast while child 1 still runs")
	if cf := (*flow.ChildFailedError)(nil); !errors.As(err, &cf) || cf.Index != 0 {
		t.Fatalf("join: %v, want child 0's failure", err)
	}
}
