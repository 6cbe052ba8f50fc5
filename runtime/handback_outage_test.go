package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestHandBacksDuringOutageEndWithTheirLeases: the jobs one push brings
// to a worker with no free slot are handed back one after the other; while
// their partition does not answer, the hand-backs are sent again until
// the jobs' leases could have run out (Worker.Run), which are the same
// for all of them (one enqueue leased them). A helper's audit found each
// hand-back retried for a whole lease of its own, from when the one
// before gave up: four jobs held their hand-backs, and a stopping
// worker's Run, four leases, where the Run's documented bound counts one.
func TestHandBacksDuringOutageEndWithTheirLeases(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	rdb := shared.Client(t)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}
	rdb.AddHook(&testkit.FailCalls{Script: lua.Ack, Part: keys.Partition{NS: e.NS, Queue: "b"}})
	started := testkit.Chan[string]()
	release := make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		if job.Args.N == 1 {
			<-release
		}
		return nil
	}))
	defer close(release)
	dry := e.Sig.Dry.Subscribe()
	defer dry.Close()
	w := e.startWorker(reg, runtime.Options{Concurrency: 8, ClaimBatch: 8, Queues: map[string]int{"a": 1, "b": 1},
		Lease: lease, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	seen := map[string]bool{}
	for len(seen) < 2 {
		d := dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() })
		seen[d.Queue] = true
	}
	handed := e.Sig.Settled.Subscribe()
	defer handed.Close()
	in := func(q string, n int, k int) []flow.Item {
		var items []flow.Item
		for range n {
			items = append(items, flow.Item{Args: workArgs{N: k}, Opts: []flow.EnqueueOption{flow.WithQueue(q)}})
		}
		return items
	}
	// a's jobs take every slot (four pushed, four claimed)
	_, err := e.Client.EnqueueMany(context.Background(), in("a", 8, 1)...)
	testkit.Must(t, err)
	for range 8 {
		testkit.Recv(t, started, "the jobs of a")
	}
	begun := time.Now()
	_, err = e.Client.EnqueueMany(context.Background(), in("b", 4, 2)...) // pushed to b's offer of four
	testkit.Must(t, err)
	for range 4 {
		s := handed.WaitFor(t, func(s testsignal.Settled) bool { return s.By == testsignal.HandBack })
		if s.Err == nil {
			t.Fatalf("hand-back %+v went through an unreachable partition", s)
		}
	}
	if took := time.Since(begun); took > 2*lease {
		t.Errorf("the four hand-backs took %v to give up, want about a lease (%v): their leases had all run out", took, lease)
	}
}
