package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestQueuedAckEndsWithItsLease: while a partition does not answer (its
// acks and renewals fail), an ack is sent again until its attempt's lease
// could have run out (Worker.Run, docs/guarantees.md), however long it
// waited behind the partition's earlier ack, itself retried. A helper's
// audit found a queued ack's retries reckoned from when its call started,
// after the one before it gave up: the second job of a partition kept
// its ack, and a stopping worker's Run, a lease past that job's lease.
func TestQueuedAckEndsWithItsLease(t *testing.T) {
	t.Parallel()
	const lease = time.Second
	rdb := shared.Client(t)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}
	p := e.partition()
	release := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
	started := testkit.Chan[string]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.ID
		<-release[job.Args.N]
		return nil
	}))
	settled := e.Sig.Settled.Subscribe()
	defer settled.Close()
	w := e.startWorker(reg, runtime.Options{Concurrency: 2, Lease: lease, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	first, second := e.Enqueue(workArgs{N: 1}), e.Enqueue(workArgs{N: 2})
	testkit.Recv(t, started, "a job to start")
	testkit.Recv(t, started, "both jobs to start")
	rdb.AddHook(&testkit.FailCalls{Script: lua.Ack, Part: p})
	rdb.AddHook(&testkit.FailCalls{Script: lua.Renew, Part: p})
	begun := time.Now()
	close(release[1])
	time.Sleep(lease / 4)
	close(release[2]) // before its lease runs out by the worker's clock: it is acked
	for done := map[string]time.Duration{}; len(done) < 2; {
		s := settled.WaitFor(t, func(s testsignal.Settled) bool { return s.Worker == w.ID() && s.By == testsignal.Ack })
		if s.Err == nil {
			t.Fatalf("%+v: an ack went through a partition that does not answer", s)
		}
		done[s.JobID] = time.Since(begun)
		if s.JobID == second && done[second] > 2*lease {
			t.Errorf("%s's ack gave up %v after the outage began, want about a lease (%v): its lease had run out (the first, %s, gave up after %v)",
				second, done[second], lease, first, done[first])
		}
	}
}
