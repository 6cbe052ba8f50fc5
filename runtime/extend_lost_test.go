package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestExtendLeaseLostMeanwhile: ExtendLease is in flight when the renewal
// loop abandons the attempt at the worker's lease end (its handler
// cancelled with ErrLeaseLost; nothing of it will be acked). When the
// call then lands, ExtendLease must answer ErrLeaseLost: it answered nil,
// telling the handler it held a lease its worker had given up.
func TestExtendLeaseLostMeanwhile(t *testing.T) {
	t.Parallel()
	const (
		lease = 30 * time.Second
		renew = 9 * time.Second
	)
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	rg := newCallGate(isScript(lua.Renew, ""))
	e.RDB.AddHook(rg)
	started, extended, lost := testkit.Chan[string](), testkit.Chan[[2]error](), testkit.Chan[struct{}]()
	go_ := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		go func() {
			<-ctx.Done()
			lost <- struct{}{}
		}()
		<-go_
		err := runtime.ExtendLease(context.WithoutCancel(ctx), 0)
		extended <- [2]error{err, context.Cause(ctx)}
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{Clock: clk, Lease: lease, RenewInterval: renew,
		MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	t.Cleanup(rg.open)
	e.Sig.Renewed.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 })
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the job to start")
	rg.armed.Store(true)
	close(go_) // ExtendLease is sent and held
	testkit.Recv(t, (<-chan struct{})(rg.held), "ExtendLease's renewal to be held")
	clk.Advance(lease) // the background round's renewal is held too; expire abandons the attempt
	testkit.Recv(t, lost, "the handler to be cancelled at its lease's end")
	rg.open()
	r := testkit.Recv(t, extended, "ExtendLease to return")
	if !errors.Is(r[1], runtime.ErrLeaseLost) || !errors.Is(r[0], runtime.ErrLeaseLost) {
		t.Fatalf("ExtendLease answered %v after the worker abandoned the attempt (cause %v); job now %s",
			r[0], r[1], e.Job(id).State)
	}
}
