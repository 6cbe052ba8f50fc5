package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// TestQueuedStepEndsWithItsLease: while a partition does not answer (its
// step commits and renewals fail), a step commit is sent again until its
// attempt's lease could have run out, however long it waited behind the
// partition's earlier step call, itself sent again: the class of
// TestQueuedAckEndsWithItsLease. Its tries were reckoned from when its
// own call first failed, so the second job's step held its handler (and
// a stopping worker's Run) a lease past its lease.
func TestQueuedStepEndsWithItsLease(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	rdb := shared.Client(t)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}
	p := e.partition()
	release := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
	started := testkit.Chan[int]()
	type ended struct {
		n   int
		at  time.Time
		err error
	}
	ends := testkit.Chan[ended]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		started <- job.Args.N
		<-release[job.Args.N]
		err := step.Do(ctx, "commit", func(context.Context) error { return nil })
		ends <- ended{job.Args.N, time.Now(), err}
		return err
	}))
	e.startWorker(reg, runtime.Options{Concurrency: 2, Lease: lease, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	e.Enqueue(workArgs{N: 1})
	e.Enqueue(workArgs{N: 2})
	testkit.Recv(t, started, "a job to start")
	testkit.Recv(t, started, "both jobs to start")
	rdb.AddHook(&testkit.FailCalls{Script: lua.Step, Part: p})
	rdb.AddHook(&testkit.FailCalls{Script: lua.Renew, Part: p})
	begun := time.Now()
	close(release[1])
	time.Sleep(lease / 4)
	close(release[2]) // its step is sent behind the first one's call, sent again
	for range 2 {
		s := testkit.Recv(t, ends, "a step commit to end")
		if s.err == nil {
			t.Fatalf("job %d's step committed through a partition that does not answer", s.n)
		}
		// the first gives up about a lease after the outage began, the
		// second as soon as its call is tried (its lease ran out waiting);
		// reckoned from its own call's first failure it went on a lease more
		took := s.at.Sub(begun)
		t.Logf("job %d: its step gave up %v after the outage began", s.n, took)
		if s.n == 2 && took > lease*19/10 {
			t.Errorf("job 2's step gave up %v after the outage began, want about a lease (%v) and a retry's delay: its lease had run out", took, lease)
		}
	}
}
