package runtime_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
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
	goCPU, redisCPU := processCPU(b), serverCPU(b, rdb)
	b.ResetTimer()
	go func() { stopped <- w.Run(wctx) }()
	<-finished
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-goCPU)/float64(b.N), "go-cpu-ns/job")
	b.ReportMetric(float64(serverCPU(b, rdb)-redisCPU)/float64(b.N), "redis-cpu-ns/job")
	cancel()
	if err := <-stopped; err != nil {
		b.Fatal(err)
	}
}

// processCPU is this process's CPU time (user + system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is redis-server's CPU time (INFO cpu: used_cpu_user + used_cpu_sys).
func serverCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.SplitSeq(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
