package runtime_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "bench.noop" }

// BenchmarkWorkerNoop measures what one no-op job costs a worker from
// claim to ack on the package's redis-server (ns/op is wall time per job,
// allocs/op the worker's allocations; the queue is filled before the timer
// starts). Wall time swings with whatever else the machine runs; the
// go-cpu-ns/job and redis-cpu-ns/job metrics (CPU time of this process
// and of redis-server over the run, per job) are steadier. Compare runs
// with benchstat.
func BenchmarkWorkerNoop(b *testing.B) {
	benchWorker(b, noopArgs{}, "job", func(reg *flow.Registry, done func()) error {
		return flow.Register(reg, func(context.Context, *flow.Job[noopArgs]) error {
			done()
			return nil
		})
	})
}

type workflowArgs struct{}

func (workflowArgs) Kind() string { return "bench.workflow" }

// workflowSteps is the length of BenchmarkWorkflow's jobs.
const workflowSteps = 10

var stepNames = func() []string {
	names := make([]string, workflowSteps)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	return names
}()

// BenchmarkWorkflow measures what a durable workflow of ten no-op steps
// costs a worker, as BenchmarkWorkerNoop a no-op job: an op is one
// workflow (its claim, ten checkpoints and its ack), and the per-step
// cost is about a tenth of it once BenchmarkWorkerNoop's is taken away.
func BenchmarkWorkflow(b *testing.B) {
	noop := func(context.Context) error { return nil }
	benchWorker(b, workflowArgs{}, "workflow", func(reg *flow.Registry, done func()) error {
		return flow.Register(reg, func(ctx context.Context, _ *flow.Job[workflowArgs]) error {
			for _, name := range stepNames {
				if err := step.Do(ctx, name, noop); err != nil {
					return err
				}
			}
			done()
			return nil
		})
	})
}

// benchWorker enqueues b.N jobs of args, then times a worker (Concurrency
// 50, completed jobs discarded) running them with the handler register
// registers, which calls done once per job; unit names the metrics' op.
func benchWorker(b *testing.B, args flow.Args, unit string, register func(*flow.Registry, func()) error) {
	ctx := context.Background()
	rdb := shared.Server.Client()
	defer rdb.Close()
	ns := redistest.NewNamespace(b)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	var finished atomic.Int64
	all := make(chan struct{})
	reg := flow.NewRegistry()
	if err := register(reg, func() {
		if finished.Add(1) == int64(b.N) {
			close(all)
		}
	}); err != nil {
		b.Fatal(err)
	}
	batch := make([]flow.Item, 0, 1000)
	for left := b.N; left > 0; left -= len(batch) {
		batch = batch[:0]
		for range min(left, 1000) {
			batch = append(batch, flow.Item{Args: args})
		}
		if _, err := c.EnqueueMany(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{Namespace: ns, Concurrency: 50, DiscardCompleted: true})
	if err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	b.ReportAllocs()
	goCPU, redisCPU := testkit.ProcessCPU(b), testkit.ServerCPU(b, rdb)
	b.ResetTimer()
	go func() { stopped <- w.Run(wctx) }()
	<-all
	b.StopTimer()
	b.ReportMetric(float64(testkit.ProcessCPU(b)-goCPU)/float64(b.N), "go-cpu-ns/"+unit)
	b.ReportMetric(float64(testkit.ServerCPU(b, rdb)-redisCPU)/float64(b.N), "redis-cpu-ns/"+unit)
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPickup measures one job at a time through an idle worker, the
// path of issue 19's pick-up latency: an Enqueue, the wake-up it
// publishes, the worker's claim, the handler and its ack, each a call of
// its own (nothing to batch). ns/op is the whole cycle's wall time, to
// the ack; the CPU metrics cover it all (the next Enqueue waits for the
// ack, so calls never overlap).
func BenchmarkPickup(b *testing.B) {
	ctx := context.Background()
	rdb := shared.Server.Client()
	defer rdb.Close()
	ns := redistest.NewNamespace(b)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[noopArgs]) error { return nil }); err != nil {
		b.Fatal(err)
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{Namespace: ns, Concurrency: 50, DiscardCompleted: true})
	if err != nil {
		b.Fatal(err)
	}
	sig := &testsignal.Worker{} // only Settled: the ack is done
	sig.Settled.Init("settled")
	wctx, cancel := context.WithCancel(testsignal.WithWorker(ctx, sig))
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(wctx) }()
	one := func() {
		if _, err := c.Enqueue(ctx, noopArgs{}); err != nil {
			b.Fatal(err)
		}
		if s := sig.Settled.Wait(b); s.State != "completed" {
			b.Fatalf("settled %+v, want completed", s)
		}
	}
	one() // the worker is up, its subscription confirmed
	b.ReportAllocs()
	goCPU, redisCPU := testkit.ProcessCPU(b), testkit.ServerCPU(b, rdb)
	b.ResetTimer()
	for range b.N {
		one()
	}
	b.StopTimer()
	b.ReportMetric(float64(testkit.ProcessCPU(b)-goCPU)/float64(b.N), "go-cpu-ns/job")
	b.ReportMetric(float64(testkit.ServerCPU(b, rdb)-redisCPU)/float64(b.N), "redis-cpu-ns/job")
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}
