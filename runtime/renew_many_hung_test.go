package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestManyHungPartitionsDelayNoHealthyRenewal: sixteen partitions whose
// renewal calls hang (a cluster node holding many of a worker's
// partitions) must not delay the renewals of healthy ones: a cap on the
// calls in flight let the hung calls hold every slot until the round's
// bound, the healthy calls waited for a slot as long, and healthy jobs,
// whose Redis answers at once, lost their leases.
func TestManyHungPartitionsDelayNoHealthyRenewal(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
		hung  = 16
		ok    = 4
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	gate := newCallGate(isScript(lua.Renew, ":hung"))
	e.RDB.AddHook(gate)
	type seen struct {
		n     int
		cause error
	}
	started, causes := testkit.Chan[int](), testkit.Chan[seen]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.Args.N
		<-ctx.Done()
		causes <- seen{job.Args.N, context.Cause(ctx)}
		return ctx.Err()
	}))
	qs := map[string]int{}
	for i := range hung {
		qs[fmt.Sprintf("hung%d", i)] = 1
	}
	for i := range ok {
		qs[fmt.Sprintf("ok%d", i)] = 1
	}
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew, Concurrency: 64,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour, Queues: qs})
	t.Cleanup(gate.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	for i := range hung {
		e.Enqueue(workArgs{N: 100 + i}, flow.WithQueue(fmt.Sprintf("hung%d", i)))
	}
	for i := range ok {
		e.Enqueue(workArgs{N: i}, flow.WithQueue(fmt.Sprintf("ok%d", i)))
	}
	for range hung + ok {
		testkit.Recv(t, started, "a job to start")
	}
	gate.armed.Store(true)
	clk.Advance(renew) // round 1: 16 hung calls and 4 healthy ones
	testkit.Recv(t, (<-chan struct{})(gate.held), "a renewal to hang")
	time.Sleep(500 * time.Millisecond) // every call has taken a slot or waits for one
	clk.Advance(lease - renew)         // the leases claimed at the start run out
	deadline := time.After(3 * time.Second)
	for {
		select {
		case s := <-causes:
			if s.n < 100 && errors.Is(s.cause, runtime.ErrLeaseLost) {
				t.Fatalf("healthy job %d (its Redis answers at once) lost its lease: its renewal waited for a slot that hung partitions held", s.n)
			}
		case <-deadline:
			return
		}
	}
}
