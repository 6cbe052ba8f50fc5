package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestReapedIntoArchiveLoggedAndReportedAsArchived: a job whose lease
// expired and whose crash counter cannot be counted (corrupt data) is
// archived by the reaper ('malformed'), not retried. The reaping worker
// logs it as archived, not as a crash that will retry, and reports its
// death at once, as it does a quarantine, rather than leaving it to a
// sweep. Its metrics count no crash: the store charged none.
func TestReapedIntoArchiveLoggedAndReportedAsArchived(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := testkit.Chan[string]()
	regA := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		started <- job.ID
		<-release // stalled: ignores its context
		return nil
	})
	a := e.startWorker(regA, runtime.Options{Clock: clkA, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour})
	id := e.Enqueue(obsArgs{})
	testkit.Recv(t, started, "A to start the job")
	ref, _ := keys.ParseRef(e.NS, id)
	testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), keys.FieldCrashAttempt, "zz").Err())

	deaths := testkit.Chan[runtime.Death]()
	readerB := sdkmetric.NewManualReader()
	// B's clock is past A's lease; its sweep of death reports never ticks
	b, logsB := e.startLogged(flow.NewRegistry(), runtime.Options{Clock: newTestClock(start.Add(lease + time.Second)),
		Lease: lease, IdlePoll: time.Hour, MaintenanceInterval: time.Hour,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerB)),
		OnDeath:       func(_ context.Context, d runtime.Death) { deaths <- d }})
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.By == testsignal.Reap }); s.State != "archived" {
		t.Fatalf("reaped into %s, want archived", s.State)
	}
	// counted before the reap is signalled
	checkMetrics(t, metrics(t, readerB), map[string]float64{}, "sluice.jobs.")
	d := testkit.Recv(t, deaths, "B's report of the death")
	if d.Job.ID != id || d.State != "archived" || d.Reason != "malformed" {
		t.Errorf("death %+v, want %s archived, malformed", d, id)
	}
	// read once the death is reported: the report's reading of the job,
	// whose data is corrupt, warns before OnDeath is called (it was read
	// before, and failed when the death goroutine had already warned)
	want := []map[string]any{{
		"level": "ERROR", "msg": "job archived", "worker": b.ID(),
		"job": id, "queue": "default", "reason": "malformed", "lost_by": a.ID(), "state": "archived",
	}, {
		"level": "WARN", "msg": "reading a dead job for its death report failed", "worker": b.ID(), "job": id,
		"err": "sluice: malformed job data in Redis: job " + ref.Local + `: field is not a number: "zz"`,
	}}
	if diff := cmp.Diff(want, logsB.about(t, id)); diff != "" {
		t.Errorf("B's records about the job (-want +got):\n%s", diff)
	}
}
