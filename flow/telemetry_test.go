package flow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

type traced struct{ Fail bool }

func (traced) Kind() string { return "traced" }

// tracing is a namespace whose client and worker record spans in rec.
type tracing struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	client *flow.Client
	ns     string
	sig    *testsignal.Worker // its worker's
}

func newTracing(t *testing.T, reg *flow.Registry) *tracing {
	t.Helper()
	rdb := realRedis(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{
		Namespace: ns, TracerProvider: tp, Backoff: func(int) time.Duration { return 0 },
		MaintenanceInterval: 10 * time.Millisecond,
	}, nil)
	return &tracing{rec: rec, tp: tp, client: c, ns: ns, sig: w.Sig}
}

// spans waits until n ended spans are named name and returns them, oldest
// (first started) first: spans can end in another order (a retry due at
// once can run and end its attempt before the failed attempt's span
// ends). It checks after each attempt the worker settles: an attempt's
// span, and those of the enqueues and steps it made, end before.
func (tr *tracing) spans(t *testing.T, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	testkit.Until(t, &tr.sig.Settled, nil, fmt.Sprintf("%d ended spans named %q", n, name), func() (bool, string) {
		got = got[:0]
		for _, s := range tr.rec.Ended() {
			if s.Name() == name {
				got = append(got, s)
			}
		}
		return len(got) >= n, fmt.Sprint(len(got))
	})
	slices.SortStableFunc(got, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return got
}

func attrs(s sdktrace.ReadOnlySpan) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// checkAttrs compares the attributes of s named in want.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	all, got := attrs(s), map[string]any{}
	for k := range want {
		got[k] = all[k]
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("span %s attributes (-want +got):\n%s", s.Name(), d)
	}
}

// checkParent asserts that child's parent is parent, in the same trace.
func checkParent(t *testing.T, child, parent sdktrace.ReadOnlySpan, remote bool) {
	t.Helper()
	p := child.Parent()
	if p.TraceID() != parent.SpanContext().TraceID() || p.SpanID() != parent.SpanContext().SpanID() || p.IsRemote() != remote {
		t.Errorf("span %s: parent %s/%s (remote %v), want %s %s/%s (remote %v)", child.Name(),
			p.TraceID(), p.SpanID(), p.IsRemote(), parent.Name(), parent.SpanContext().TraceID(), parent.SpanContext().SpanID(), remote)
	}
}

// TestTracing: the enqueue span is a child of the caller's span, each
// attempt a (remote) child of the enqueue span through the job's headers,
// and each step a child of its attempt; a replayed step is marked cached;
// a failed attempt has an error status.
func TestTracing(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var headers atomic.Value
	var runs atomic.Int64
	err := flow.Register(reg, func(ctx context.Context, job *flow.Job[traced]) error {
		headers.Store(job.Headers)
		if _, err := step.Run(ctx, "charge", func(context.Context) (int, error) { return 7, nil }); err != nil {
			return err
		}
		if runs.Add(1) == 1 {
			return errors.New("mail server busy")
		}
		return step.Do(ctx, "notify", func(context.Context) error { return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracing(t, reg)
	ctx, request := tr.tp.Tracer("test").Start(context.Background(), "request")
	res, err := tr.client.Enqueue(ctx, traced{}, flow.WithHeaders(map[string]string{"tenant": "acme"}))
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, tr.client, tr.sig, res.ID, flow.StateCompleted)

	enq := tr.spans(t, "sluice.enqueue traced", 1)[0]
	if enq.SpanKind() != trace.SpanKindProducer {
		t.Errorf("enqueue span kind %v", enq.SpanKind())
	}
	checkParent(t, enq, tr.spans(t, "request", 1)[0], false)
	checkAttrs(t, enq, map[string]any{"sluice.job.id": res.ID, "sluice.queue": "default", "sluice.job.kind": "traced", "sluice.duplicate": false})

	h, _ := headers.Load().(map[string]string)
	if h["tenant"] != "acme" || h["traceparent"] == "" {
		t.Errorf("job headers %v: want the caller's tenant and a traceparent", h)
	}

	att := tr.spans(t, "sluice.attempt traced", 2)
	for i, a := range att {
		checkParent(t, a, enq, true)
		if a.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("attempt span kind %v", a.SpanKind())
		}
		checkAttrs(t, a, map[string]any{
			"sluice.job.id": res.ID, "sluice.queue": "default", "sluice.job.kind": "traced",
			"sluice.attempt": int64(i), "sluice.crash_attempt": int64(0), "sluice.fence": int64(i + 1),
		})
	}
	checkAttrs(t, att[0], map[string]any{"sluice.outcome": "retry", "sluice.job.state": "retryable", "sluice.reason": "error"})
	if st := att[0].Status(); st.Code != codes.Error || st.Description != "mail server busy" {
		t.Errorf("failed attempt's status %+v", st)
	}
	if ev := att[0].Events(); len(ev) != 1 || ev[0].Name != "exception" {
		t.Errorf("failed attempt's events %+v, want one exception", ev)
	}
	checkAttrs(t, att[1], map[string]any{"sluice.outcome": "ok", "sluice.job.state": "completed"})
	if st := att[1].Status(); st.Code != codes.Unset {
		t.Errorf("completed attempt's status %+v", st)
	}

	charge := tr.spans(t, "sluice.step charge", 2)
	for i, s := range charge {
		checkParent(t, s, att[i], false)
		checkAttrs(t, s, map[string]any{"sluice.step": "charge", "sluice.step.index": int64(0), "sluice.step.cached": i == 1})
	}
	notify := tr.spans(t, "sluice.step notify", 1)[0]
	checkParent(t, notify, att[1], false)
	checkAttrs(t, notify, map[string]any{"sluice.step": "notify", "sluice.step.index": int64(1), "sluice.step.cached": false})
}

// TestTracingFanOut: children's attempts are children of the step that
// spawned them, so a whole fan-out is one trace.
func TestTracingFanOut(t *testing.T) {
	t.Parallel()
	var parentRuns atomic.Int64
	tr := newTracing(t, fanOutRegistry(t, &parentRuns))
	res, err := tr.client.Enqueue(context.Background(), parentJob{N: 3, Fail: -1})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitState(t, tr.client, tr.sig, res.ID, flow.StateCompleted)
	spawn := tr.spans(t, "sluice.step spawn", 1)[0]
	kids := tr.spans(t, "sluice.attempt child", 3)
	for _, k := range kids {
		checkParent(t, k, spawn, true)
	}
	root := tr.spans(t, "sluice.enqueue parent", 1)[0]
	if root.Parent().IsValid() {
		t.Errorf("enqueue without a caller's span has parent %v", root.Parent())
	}
	for _, s := range tr.rec.Ended() {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %s is in trace %s, not the enqueue's", s.Name(), s.SpanContext().TraceID())
		}
	}
}

// TestTraceHeaders: a traceparent the caller set is kept (and parents the
// attempt); without an SDK the trace context of the caller's span still
// travels; with neither, no header is added.
func TestTraceHeaders(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	got := make(chan map[string]string, 4)
	err := flow.Register(reg, func(ctx context.Context, job *flow.Job[traced]) error {
		got <- job.Headers
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracing(t, reg)
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, err := tr.client.Enqueue(context.Background(), traced{}, flow.WithHeaders(map[string]string{"traceparent": own})); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h["traceparent"] != own {
		t.Errorf("caller's traceparent replaced: %v", h)
	}
	att := tr.spans(t, "sluice.attempt traced", 1)[0]
	if p := att.Parent(); p.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || p.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("attempt's parent %s/%s, want the caller's traceparent", p.TraceID(), p.SpanID())
	}

	// A client with no SDK (no-op provider): the caller's span context
	// still reaches the job; nothing is added without one.
	plain, err := flow.NewClient(realRedis(t), flow.ClientOptions{Namespace: tr.ns, TracerProvider: noop.NewTracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	if _, err := plain.Enqueue(trace.ContextWithSpanContext(context.Background(), sc), traced{}); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h["traceparent"] != "00-01020300000000000000000000000000-0405060000000000-01" {
		t.Errorf("headers %v: want the caller's span context", h)
	}
	if _, err := plain.Enqueue(context.Background(), traced{}); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != nil {
		t.Errorf("headers %v added without a span context", h)
	}
}

// TestEnqueueManyWithoutTracer: with no tracer provider and no trace in
// the context, a call's items share one span that records nothing (no
// span per item: an allocation saved on every job) and get no trace
// headers; each is still counted under its own queue.
func TestEnqueueManyWithoutTracer(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rdb, ns := realRedis(t), redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns,
		TracerProvider: noop.NewTracerProvider(), MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	items := []flow.Item{{Args: traced{}}, {Args: traced{}, Opts: []flow.EnqueueOption{flow.WithQueue("other")}}, {Args: traced{}}}
	out, err := c.EnqueueMany(context.Background(), items...)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out {
		ref, ok := keys.ParseRef(ns, e.ID)
		h, err := rdb.HGet(context.Background(), ref.Partition.Job(ref.Local), keys.FieldHeaders).Result()
		if !ok || h != "" || !errors.Is(err, redis.Nil) {
			t.Errorf("job %s: headers %q (%v); want none", e.ID, h, err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "sluice.jobs.enqueued" {
				for _, p := range sum.DataPoints {
					q, _ := p.Attributes.Value("sluice.queue")
					got[q.AsString()] += p.Value
				}
			}
		}
	}
	if want := map[string]int64{"default": 2, "other": 1}; !cmp.Equal(got, want) {
		t.Errorf("enqueued per queue = %v, want %v", got, want)
	}
}

// TestEnqueueCarriesBaggageWithoutTracer: with no tracer but baggage in
// the context and a propagator that carries it, every job of the call
// gets the baggage in its headers (the items do not share an inert span,
// which would write none). Not parallel: it sets the global propagator.
func TestEnqueueCarriesBaggageWithoutTracer(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	rdb, ns := realRedis(t), redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, TracerProvider: noop.NewTracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.EnqueueMany(baggage.ContextWithBaggage(context.Background(), bag), flow.Item{Args: traced{}}, flow.Item{Args: traced{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out {
		ref, _ := keys.ParseRef(ns, e.ID)
		raw, err := rdb.HGet(context.Background(), ref.Partition.Job(ref.Local), keys.FieldHeaders).Bytes()
		var h map[string]string
		if err == nil {
			err = msgpack.Unmarshal(raw, &h)
		}
		if err != nil || h["baggage"] != "tenant=acme" {
			t.Errorf("job %s: headers %v (%v); want baggage tenant=acme", e.ID, h, err)
		}
	}
}
