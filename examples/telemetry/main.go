// Command telemetry runs one job through Sluice with the OpenTelemetry SDK
// installed: the stdout trace exporter prints every span as it ends (one
// JSON object per line: the enqueue, each attempt, each step), then the
// program prints the trace as a tree and the metrics the worker and the
// client recorded. Without REDIS_URL it runs on an embedded Redis
// (miniredis).
//
// Sluice forces no exporter: it uses the OpenTelemetry API, and the global
// providers unless flow.ClientOptions or runtime.Options name others.
// Installing an SDK, as here, is all it takes.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// ShipOrder is the job: charge, then ship (the carrier fails once).
type ShipOrder struct{ Order string }

// Kind names the job type.
func (ShipOrder) Kind() string { return "ship_order" }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "telemetry:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The SDK: spans to stdout (and to a recorder, for the tree below),
	// metrics to a reader collected at the end.
	exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
	if err != nil {
		return err
	}
	tree := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(tree))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)

	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Println("redis:", where)

	var done sync.WaitGroup
	done.Add(1)
	reg := flow.NewRegistry()
	err = flow.Register(reg, func(ctx context.Context, job *flow.Job[ShipOrder]) error {
		// Steps get the attempt's span in ctx: their spans are its children.
		if _, err := step.Run(ctx, "charge", func(context.Context) (string, error) { return "ch_" + job.Args.Order, nil }); err != nil {
			return err
		}
		if job.Attempt == 0 {
			return errors.New("carrier timeout") // retried; "charge" is not run again
		}
		if err := step.Do(ctx, "ship", func(context.Context) error { return nil }); err != nil {
			return err
		}
		done.Done()
		return nil
	})
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("telemetry-%d", time.Now().UnixNano())
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return err
	}
	worker, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: ns, Backoff: func(int) time.Duration { return 100 * time.Millisecond },
		MaintenanceInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(runCtx) }()

	// The caller's own span: the enqueue span is its child, and the job's
	// headers carry the trace to the worker.
	fmt.Println("spans (stdout exporter):")
	reqCtx, checkout := tp.Tracer("shop").Start(ctx, "checkout")
	_, err = client.Enqueue(reqCtx, ShipOrder{Order: "1001"}, flow.WithHeaders(map[string]string{"tenant": "acme"}))
	checkout.End()
	if err != nil {
		return err
	}
	done.Wait()
	waitSpans(ctx, tree, "sluice.attempt ship_order", 2) // the last ends once its outcome is acked
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil { // while the worker runs: it reports queue depth
		return err
	}
	stop()
	if err := <-stopped; err != nil {
		return err
	}
	fmt.Println("trace:")
	printTree(tree.Ended())
	fmt.Println("metrics:")
	printMetrics(rm)
	return nil
}

// waitSpans waits until n ended spans are named name.
func waitSpans(ctx context.Context, rec *tracetest.SpanRecorder, name string, n int) {
	for ctx.Err() == nil {
		got := 0
		for _, s := range rec.Ended() {
			if s.Name() == name {
				got++
			}
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// printTree prints spans indented under their parents, in start order.
func printTree(spans []sdktrace.ReadOnlySpan) {
	sort.Slice(spans, func(i, j int) bool { return spans[i].StartTime().Before(spans[j].StartTime()) })
	kids := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		kids[s.Parent().SpanID().String()] = append(kids[s.Parent().SpanID().String()], s)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range kids[parent] {
			var notes []string
			for _, kv := range s.Attributes() {
				switch kv.Key {
				case "sluice.outcome", "sluice.job.state", "sluice.step.cached":
					notes = append(notes, fmt.Sprintf("%s=%v", kv.Key, kv.Value.AsInterface()))
				}
			}
			if s.Status().Description != "" {
				notes = append(notes, "error="+s.Status().Description)
			}
			fmt.Printf("  %s%s %s\n", strings.Repeat("  ", depth), s.Name(), strings.Join(notes, " "))
			walk(s.SpanContext().SpanID().String(), depth+1)
		}
	}
	walk("0000000000000000", 0)
}

// printMetrics prints every data point of rm on one line.
func printMetrics(rm metricdata.ResourceMetrics) {
	enc := attribute.DefaultEncoder()
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(enc), p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if p.Value != 0 {
						lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(enc), p.Value))
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d", m.Name, p.Attributes.Encoded(enc), p.Count))
				}
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println("  " + l)
	}
}
