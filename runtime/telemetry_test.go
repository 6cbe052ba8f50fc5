package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// metrics reads everything reader holds, one entry per data point: a
// sum's or gauge's value, a histogram's count and sum, keyed
// "name{attributes}" (histograms "name.count{...}" and "name.sum{...}").
func metrics(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	key := func(name string, s attribute.Set) string {
		return name + "{" + s.Encoded(attribute.DefaultEncoder()) + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name+".count", p.Attributes)] = float64(p.Count)
					out[key(m.Name+".sum", p.Attributes)] = p.Sum
				}
			default:
				t.Fatalf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// checkMetrics compares the entries of got whose name starts with one of
// prefixes with want.
func checkMetrics(t *testing.T, got, want map[string]float64, prefixes ...string) {
	t.Helper()
	sel := map[string]float64{}
	for k, v := range got {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				sel[k] = v
			}
		}
	}
	if d := cmp.Diff(want, sel); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
}

// TestMetrics: the counters of a worker's attempts by outcome, the
// attempt duration (worker clock) and enqueue-to-claim latency (store
// clock) histograms, the client's enqueued counter and the queue depth.
func TestMetrics(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	client, err := flow.NewClient(e.RDB, flow.ClientOptions{Namespace: e.NS, Clock: clk, MeterProvider: mp})
	testkit.Must(t, err)

	started, release := testkit.Chan[int](), make(chan struct{})
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		switch job.Args.N {
		case 1: // fails once, then completes
			if job.Attempt == 0 {
				return errors.New("flaky")
			}
		case 2: // fails for good (MaxAttempts 1)
			return errors.New("broken")
		case 3: // panics until quarantined
			panic("boom")
		case 5: // runs for 2s of worker time
			started <- 5
			<-release
		}
		return nil
	}))
	for n := 1; n <= 4; n++ {
		opts := []flow.EnqueueOption{}
		if n == 2 {
			opts = append(opts, flow.WithMaxAttempts(1))
		}
		if _, err := client.Enqueue(context.Background(), workArgs{N: n}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(3 * time.Second) // every first attempt is claimed 3s after its enqueue
	e.startWorker(reg, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clk, MeterProvider: mp, CrashLimit: 2, Backoff: func(int) time.Duration { return 0 }, IdlePoll: time.Hour,
	})
	// An attempt is counted before the worker signals its ack: six
	// attempts (1 twice, 2 once, 3 twice, 4 once). Only acks count here: a
	// claim may lease a job the worker then hands back unrun (a second
	// suspect, no free slot), which is settled too but is no attempt.
	const attempts = "sluice.attempt.duration.count{sluice.job.kind=work,sluice.queue=default}"
	acked := func(s testsignal.Settled) bool { return s.By == testsignal.Ack }
	for range 6 {
		e.Sig.Settled.WaitFor(t, acked)
	}
	if n := metrics(t, reader)[attempts]; n != 6 {
		t.Fatalf("%v attempts counted, want 6", n)
	}
	res, err := client.Enqueue(context.Background(), workArgs{N: 5})
	testkit.Must(t, err)
	testkit.Recv(t, started, "job 5 to start")
	clk.Advance(2 * time.Second)
	close(release)
	if s := e.Sig.Settled.WaitFor(t, acked); s.JobID != res.ID || s.State != flow.StateCompleted {
		t.Fatalf("settled %+v, want job 5 completed", s)
	}
	if n := metrics(t, reader)[attempts]; n != 7 {
		t.Fatalf("%v attempts counted, want 7", n)
	}

	const job = "{sluice.job.kind=work,sluice.queue=default}"
	outcome := func(o string) string {
		return "sluice.jobs.processed{sluice.job.kind=work,sluice.outcome=" + o + ",sluice.queue=default}"
	}
	depth := func(state string) string {
		return "sluice.queue.depth{sluice.job.state=" + state + ",sluice.queue=default}"
	}
	checkMetrics(t, metrics(t, reader), map[string]float64{
		"sluice.jobs.enqueued" + job:          5,
		outcome("ok"):                         3, // 1 (second try), 4, 5
		outcome("retry"):                      2, // 1 (first try), 2
		outcome("crash"):                      2, // 3 twice
		"sluice.jobs.failed" + job:            4,
		"sluice.jobs.retried" + job:           2, // 1 retryable, 3 available again
		"sluice.jobs.crashed" + job:           2,
		"sluice.jobs.quarantined" + job:       1,
		"sluice.attempt.duration.count" + job: 7,
		"sluice.attempt.duration.sum" + job:   2,
		// first attempts: 1-4 claimed 3s after their enqueue, 5 at once;
		// the retries of 1 and 3 as well 3s after the enqueue.
		"sluice.job.latency.count{sluice.attempt.first=true,sluice.job.kind=work,sluice.queue=default}":  5,
		"sluice.job.latency.sum{sluice.attempt.first=true,sluice.job.kind=work,sluice.queue=default}":    12,
		"sluice.job.latency.count{sluice.attempt.first=false,sluice.job.kind=work,sluice.queue=default}": 2,
		"sluice.job.latency.sum{sluice.attempt.first=false,sluice.job.kind=work,sluice.queue=default}":   6,
		depth("scheduled"): 0, depth("available"): 0, depth("running"): 0, depth("retryable"): 0,
		depth("completed"): 3, depth("archived"): 1, depth("quarantined"): 1, depth("cancelled"): 0,
	}, "sluice.")
}

// TestTelemetryReapedAndRejected: worker A stalls past its lease; worker
// B reaps the job (a crash, counted by B without a kind) and completes
// it; A's late ack is rejected: a failed attempt with outcome "rejected"
// and an error status on A's span.
func TestTelemetryReapedAndRejected(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := fakeStart()
	clkA := newTestClock(start)
	e := newEnv(t, clkA)
	readerA, readerB := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	startedA, releaseA := testkit.Chan[int64](), make(chan struct{})
	regA := flow.NewRegistry()
	testkit.Must(t, flow.Register(regA, func(ctx context.Context, job *flow.Job[workArgs]) error {
		startedA <- job.Fence
		<-releaseA // stalled: ignores its context
		return nil
	}))
	a := e.startWorker(regA, runtime.Options{CrashDelay: noCrashDelay,
		Clock: clkA, Lease: lease, Concurrency: 1, MaintenanceInterval: time.Hour, IdlePoll: time.Hour,
		TracerProvider: tp, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(readerA)),
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
	// Attempts are counted and their spans ended before their worker
	// signals them settled.
	settledBy := func(w *workerRun) testsignal.Settled {
		return e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.Worker == w.ID() && s.By == testsignal.Ack })
	}
	if s := settledBy(b); s.State != flow.StateCompleted {
		t.Fatalf("B settled %+v, want completed", s)
	}
	close(releaseA)
	settledBy(a)
	if n := len(rec.Ended()); n != 1 {
		t.Fatalf("%d spans ended, want A's", n)
	}
	const job = "{sluice.job.kind=work,sluice.queue=default}"
	if m := metrics(t, readerB); m["sluice.attempt.duration.count"+job] != 1 {
		t.Fatalf("B's attempts: %v", m)
	}
	checkMetrics(t, metrics(t, readerB), map[string]float64{
		"sluice.jobs.crashed{sluice.queue=default}":                                          1,
		"sluice.jobs.processed{sluice.job.kind=work,sluice.outcome=ok,sluice.queue=default}": 1,
	}, "sluice.jobs.")
	checkMetrics(t, metrics(t, readerA), map[string]float64{
		"sluice.jobs.processed{sluice.job.kind=work,sluice.outcome=rejected,sluice.queue=default}": 1,
		"sluice.jobs.failed" + job: 1,
	}, "sluice.jobs.")
	span := rec.Ended()[0]
	if span.Name() != "sluice.attempt work" || span.Status().Code != codes.Error ||
		!strings.HasPrefix(span.Status().Description, "outcome rejected") {
		t.Errorf("A's span %s: status %+v", span.Name(), span.Status())
	}
}

// TestCrashArchivedAsMalformedIsNoCrash: a panicking attempt whose job's
// crash counter was corrupted while it ran is archived by its ack
// ('malformed'), not charged a crash. The worker logs it as archived (not
// as a crash that will retry), sends a failed event, reports its death
// with reason malformed, and counts a failed attempt but no crash: the
// store charged none.
func TestCrashArchivedAsMalformedIsNoCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reader := sdkmetric.NewManualReader()
	events, deaths := testkit.Chan[runtime.Event](), testkit.Chan[runtime.Death]()
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		ref, _ := keys.ParseRef(e.NS, job.ID)
		testkit.Must(t, e.RDB.HSet(ctx, ref.Job(ref.Local), keys.FieldCrashAttempt, "zz").Err())
		panic("boom over corrupt data")
	})
	w, logs := e.startLogged(reg, runtime.Options{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		OnDeath:       func(_ context.Context, d runtime.Death) { deaths <- d },
		OnEvent: func(_ context.Context, ev runtime.Event) {
			if ev.Type != runtime.EventStarted {
				events <- ev
			}
		}})
	id := e.Enqueue(obsArgs{})
	// its records, event and metrics are out by then (e.settled reads the
	// job back, which its corrupt counter fails)
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.State == flow.StateArchived })
	got := logs.about(t, id)
	if len(got) != 1 {
		t.Fatalf("%d records about the job, want 1: %v", len(got), got)
	}
	delete(got[0], "duration")
	delete(got[0], "stack")
	want := map[string]any{"level": "ERROR", "msg": "job archived", "worker": w.ID(), "job": id, "kind": "obs",
		"queue": "default", "attempt": 1.0, "max_attempts": float64(flow.DefaultMaxAttempts),
		"reason": "malformed", "panic": "boom over corrupt data"}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if ev := testkit.Recv(t, events, "the outcome's event"); ev.Type != runtime.EventFailed || ev.State != flow.StateArchived || ev.Reason != "malformed" {
		t.Errorf("event %s, state %s, reason %s: want failed, archived, malformed", ev.Type, ev.State, ev.Reason)
	}
	const job = "{sluice.job.kind=obs,sluice.queue=default}"
	checkMetrics(t, metrics(t, reader), map[string]float64{
		"sluice.jobs.processed{sluice.job.kind=obs,sluice.outcome=crash,sluice.queue=default}": 1,
		"sluice.jobs.failed" + job: 1,
	}, "sluice.jobs.")
	if d := testkit.Recv(t, deaths, "the death report"); d.Job.ID != id || d.State != flow.StateArchived || d.Reason != "malformed" {
		t.Errorf("death of %s: %s, reason %q; want %s archived, malformed", d.Job.ID, d.State, d.Reason, id)
	}
}

// TestRetryArchivedAsMalformedSaysMalformed: a failed attempt (a retry)
// whose job's attempt counter was corrupted while it ran is archived by
// its ack as 'malformed', not for running out of attempts: the worker's
// record, event, span and death report say malformed, as the store wrote,
// and not attempts_exhausted.
func TestRetryArchivedAsMalformedSaysMalformed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := tracetest.NewSpanRecorder()
	events, deaths := testkit.Chan[runtime.Event](), testkit.Chan[runtime.Death]()
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		ref, _ := keys.ParseRef(e.NS, job.ID)
		testkit.Must(t, e.RDB.HSet(ctx, ref.Job(ref.Local), keys.FieldAttempt, "zz").Err())
		return errors.New("failed over corrupt data")
	})
	_, logs := e.startLogged(reg, runtime.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		OnDeath:        func(_ context.Context, d runtime.Death) { deaths <- d },
		OnEvent: func(_ context.Context, ev runtime.Event) {
			if ev.Type != runtime.EventStarted {
				events <- ev
			}
		}})
	id := e.Enqueue(obsArgs{})
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id && s.State == flow.StateArchived })
	if h := e.rawJob(id); h[keys.FieldReason] != "malformed" {
		t.Fatalf("the store archived the job for %q, want malformed", h[keys.FieldReason])
	}
	got := logs.about(t, id)
	if len(got) != 1 || got[0]["msg"] != "job archived" || got[0]["reason"] != "malformed" {
		t.Errorf("records about the job %v, want one: job archived, reason malformed", got)
	}
	if ev := testkit.Recv(t, events, "the outcome's event"); ev.Type != runtime.EventFailed || ev.State != flow.StateArchived || ev.Reason != "malformed" {
		t.Errorf("event %s, state %s, reason %s: want failed, archived, malformed", ev.Type, ev.State, ev.Reason)
	}
	if d := testkit.Recv(t, deaths, "the death report"); d.Job.ID != id || d.State != flow.StateArchived || d.Reason != "malformed" {
		t.Errorf("death of %s: %s, reason %q; want %s archived, malformed", d.Job.ID, d.State, d.Reason, id)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	for _, kv := range spans[0].Attributes() {
		if kv.Key == "sluice.reason" && kv.Value.AsString() != "malformed" {
			t.Errorf("span reason %q, want malformed", kv.Value.AsString())
		}
	}
}

// TestOperatorCancelIsNoFailedAttempt: an attempt whose job an operator
// cancels while it runs is counted with outcome "cancelled", not as a
// failed attempt that lost its lease, and its span has no error status:
// its event is EventCancelled, and it is logged as no failure.
func TestOperatorCancelIsNoFailedAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reader := sdkmetric.NewManualReader()
	rec := tracetest.NewSpanRecorder()
	reg, started, causes := blockingHandler(t)
	e.startWorker(reg, runtime.Options{Concurrency: 1,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	id := e.Enqueue(workArgs{N: 1})
	testkit.Recv(t, started, "the handler to start")
	_, err := admin.New(e.Client).CancelJob(context.Background(), id)
	testkit.Must(t, err)
	if c := testkit.Recv(t, causes, "the handler's context to end"); !errors.Is(c, runtime.ErrCancelled) {
		t.Fatalf("cause %v, want ErrCancelled", c)
	}
	// counted, and its span ended, before it is signalled
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id })
	checkMetrics(t, metrics(t, reader), map[string]float64{
		"sluice.jobs.processed{sluice.job.kind=work,sluice.outcome=cancelled,sluice.queue=default}": 1,
	}, "sluice.jobs.")
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans ended, want 1", len(spans))
	}
	attrs := map[attribute.Key]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[kv.Key] = kv.Value.String()
	}
	if s := spans[0].Status(); s.Code == codes.Error || attrs["sluice.outcome"] != "cancelled" || attrs["sluice.job.state"] != flow.StateCancelled {
		t.Errorf("span status %+v, outcome %q, state %q: want no error, cancelled, cancelled",
			s, attrs["sluice.outcome"], attrs["sluice.job.state"])
	}
}

// TestDeadlineNotYetInStoreTimeIsNoRetry: an attempt cut by its job's
// deadline on the worker's clock, acked before Redis's clock reaches the
// deadline (here: the deadline moved an hour on while the attempt ran),
// leaves the job scheduled at its deadline, for the claim that finds it
// due then to archive it: it does not run again. The attempt counts as
// failed (a deadline), not as retried, and its event (snoozed) gives no
// NextRun: the job is not due again.
func TestDeadlineNotYetInStoreTimeIsNoRetry(t *testing.T) {
	t.Parallel()
	const dl = 5 * time.Second
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reader := sdkmetric.NewManualReader()
	started, causes := testkit.Chan[string](), testkit.Chan[error]()
	body := blockUntilDone(started, causes)
	reg := register(t, func(ctx context.Context, job *flow.Job[obsArgs]) error {
		err := body(ctx, job.ID)
		// Redis's clock is not at the deadline yet, as far as the ack sees
		ref, _ := keys.ParseRef(e.NS, job.ID)
		testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), keys.FieldDeadline,
			clk.Now().Add(time.Hour).UnixMilli()).Err())
		return err
	})
	events := testkit.Chan[runtime.Event]()
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		OnEvent: func(_ context.Context, ev runtime.Event) {
			if ev.Type != runtime.EventStarted {
				events <- ev
			}
		}})
	id := e.Enqueue(obsArgs{}, flow.WithDeadline(clk.Now().Add(dl)))
	testkit.Recv(t, started, "the handler to start")
	clk.waitTimers(t, dl, 1) // the deadline is armed
	clk.Advance(dl)
	if cause := testkit.Recv(t, causes, "the deadline to cancel the handler"); !errors.Is(cause, runtime.ErrDeadline) {
		t.Fatalf("cause %v, want ErrDeadline", cause)
	}
	if s := e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool { return s.JobID == id }); s.State != flow.StateScheduled {
		t.Fatalf("settled %+v, want scheduled at its deadline", s)
	}
	const job = "{sluice.job.kind=obs,sluice.queue=default}"
	checkMetrics(t, metrics(t, reader), map[string]float64{
		"sluice.jobs.processed{sluice.job.kind=obs,sluice.outcome=deadline,sluice.queue=default}": 1,
		"sluice.jobs.failed" + job: 1,
	}, "sluice.jobs.")
	if ev := testkit.Recv(t, events, "the outcome's event"); ev.Type != runtime.EventSnoozed || !ev.NextRun.IsZero() {
		t.Errorf("event %s, next run %v: want snoozed, none", ev.Type, ev.NextRun)
	}
}
