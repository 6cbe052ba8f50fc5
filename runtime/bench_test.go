package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
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
	ctx := context.Background()
	rdb := shared.Server.Client()
	defer rdb.Close()
	ns := redistest.NewNamespace(b)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[noopArgs]) error {
		if done.Add(1) == int64(b.N) {
			close(finished)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	batch := make([]flow.Item, 0, 1000)
	for left := b.N; left > 0; left -= len(batch) {
		batch = batch[:0]
		for range min(left, 1000) {
			batch = append(batch, flow.Item{Args: noopArgs{}})
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
	<-finished
	b.StopTimer()
	b.ReportMetric(float64(testkit.ProcessCPU(b)-goCPU)/float64(b.N), "go-cpu-ns/job")
	b.ReportMetric(float64(testkit.ServerCPU(b, rdb)-redisCPU)/float64(b.N), "redis-cpu-ns/job")
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}
