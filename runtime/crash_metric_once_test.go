package runtime_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestCrashMetricCountsOneCrashOnce: worker A stalls past its lease, then
// its handler panics; worker B's reaper has reclaimed the job (one crash
// charged) and completed it. A's crash ack is refused as stale, and A
// does not count it: over the fleet, sluice.jobs.crashed adds up to the
// crashes the store charged.
func TestCrashMetricCountsOneCrashOnce(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)
	readerA, readerB := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()

	startedA, releaseA := testkit.Chan[int64](), make(chan struct{})
	regA := flow.NewRegistry()
	testkit.Must(t, flow.Register(regA, func(ctx context.Context, job *flow.Job[workArgs]) error {
		startedA <- job.Fence
		<-releaseA // stalled: ignores its context
		panic("late panic of a stale attempt")
	}))
	a := e.startWorker(regA, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clkA, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerA)),
	})
	t.Cleanup(func() {
		select {
		case <-releaseA:
		default:
			close(releaseA)
		}
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, startedA, "A to start the job")

	regB := flow.NewRegistry()
	testkit.Must(t, flow.Register(regB, func(context.Context, *flow.Job[workArgs]) error { return nil }))
	b := e.startWorker(regB, runtime.Options{CrashDelay: noCrashDelay,
		Clock: newTestClock(start.Add(lease + time.Second)), Lease: lease, IdlePoll: time.Hour,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerB)),
	})
	settledBy := func(w *workerRun) testsignal.Settled {
		return e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == w.ID() && s.By == testsignal.Ack })
	}
	if s := settledBy(b); s.State != flow.StateCompleted {
		t.Fatalf("B settled %+v, want completed", s)
	}
	close(releaseA)
	sa := settledBy(a)
	j := e.Job(id)
	const crashed = "sluice.jobs.crashed{sluice.queue=default}"
	const crashedKind = "sluice.jobs.crashed{sluice.job.kind=work,sluice.queue=default}"
	ma, mb := metrics(t, readerA), metrics(t, readerB)
	fleet := ma[crashed] + ma[crashedKind] + mb[crashed] + mb[crashedKind]
	t.Logf("A's ack: %+v; job crash_attempt %d; A crashed %v/%v, B crashed %v/%v",
		sa, j.CrashAttempt, ma[crashed], ma[crashedKind], mb[crashed], mb[crashedKind])
	if j.CrashAttempt != 1 {
		t.Fatalf("job crash_attempt %d, want 1", j.CrashAttempt)
	}
	if fleet != float64(j.CrashAttempt) {
		t.Errorf("the fleet's sluice.jobs.crashed adds up to %v for a job charged %d crash (A counted its rejected, stale panic)",
			fleet, j.CrashAttempt)
	}
}
