package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestHeldSuspectWokenOnFakeClock: on a fake clock that does not move,
// Worker B's only job is a suspect its claim passed over while Worker A
// (same process) ran one; when A's ends, B claims and runs its suspect at
// once (the held wake-up), no clock advance needed.
func TestHeldSuspectWokenOnFakeClock(t *testing.T) {
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	running := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		running <- job.ID
		if job.Args.N == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}))
	mark := func(id string) {
		ref, _ := keys.ParseRef(e.NS, id)
		testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), "c", "1").Err())
	}
	ida := e.Enqueue(gateArgs{N: 1}, flow.WithQueue("qa"))
	mark(ida)
	o := func(q string) runtime.Options {
		return runtime.Options{Clock: clk, CrashDelay: noCrashDelay, Queues: map[string]int{q: 1}, Concurrency: 2, IdlePoll: time.Minute}
	}
	e.startWorker(reg, o("qa"))
	if got := testkit.Recv(t, running, "A's suspect"); got != ida {
		t.Fatalf("ran %s", got)
	}
	idb := e.Enqueue(gateArgs{N: 2}, flow.WithQueue("qb"))
	mark(idb)
	e.startWorker(reg, o("qb"))
	select {
	case got := <-running:
		t.Fatalf("%s ran beside A's suspect", got)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	select {
	case got := <-running:
		if got != idb {
			t.Fatalf("ran %s", got)
		}
	case <-time.After(3 * time.Second):
		j := e.Job(idb)
		t.Fatalf("A's suspect ended 3 s ago (fake clock still); B's held suspect (state %s) did not run", j.State)
	}
}
