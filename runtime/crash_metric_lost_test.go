package runtime_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type lostCrashArgs struct{ N int }

func (lostCrashArgs) Kind() string { return "lostcrash" }

// TestCrashAckLostReplyCounted: a panic's crash ack runs in Redis (the
// store charges the crash) but every reply to it is lost until the worker
// gives up (past the lease: a partition of the network). No reaper will
// count it (the job is not leased any more): the worker counts it in
// sluice.jobs.crashed, as it does a crash whose ack is not refused stale.
func TestCrashAckLostReplyCounted(t *testing.T) {
	e := newEnv(t, nil)
	e.RDB.AddHook(&testkit.FailCalls{Script: lua.Ack, Part: e.partition(), LostReply: true})
	reader := sdkmetric.NewManualReader()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[lostCrashArgs]) error {
		if job.CrashAttempt == 0 {
			panic("a crash the store will charge")
		}
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{CrashDelay: time.Hour, Lease: time.Second, IdlePoll: 50 * time.Millisecond,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	id := e.Enqueue(lostCrashArgs{N: 1})
	s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == w.ID() && s.By == testsignal.Ack })
	j := e.Job(id)
	if j.State != flow.StateRetryable {
		t.Fatalf("job %s, want retryable: no lease left for a reaper to charge", j.State)
	}
	m := metrics(t, reader)
	const crashed = "sluice.jobs.crashed{sluice.queue=default}"
	const crashedKind = "sluice.jobs.crashed{sluice.job.kind=lostcrash,sluice.queue=default}"
	t.Logf("ack: %+v; job %s crash_attempt %d; crashed %v/%v", s, j.State, j.CrashAttempt, m[crashed], m[crashedKind])
	if j.CrashAttempt != 1 {
		t.Fatalf("crash_attempt %d, want 1 (the lost-reply ack ran)", j.CrashAttempt)
	}
	if m[crashed]+m[crashedKind] != 1 {
		t.Errorf("sluice.jobs.crashed is %v for a crash the store charged (its ack's reply lost): want 1",
			m[crashed]+m[crashedKind])
	}
}
