package flow_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

type benchArgs struct{}

func (benchArgs) Kind() string { return "bench.enqueue" }

// BenchmarkEnqueueMany measures what a producer pays per job enqueued in
// calls of 100 no-op jobs on the package's redis-server, with no tracer
// provider set (ns/op is wall time per job, allocs/op the producer's;
// go-cpu-ns/job and redis-cpu-ns/job are CPU time over the run, steadier
// than wall time). Compare runs with benchstat.
func BenchmarkEnqueueMany(b *testing.B) {
	batch := make([]flow.Item, 100)
	for i := range batch {
		batch[i] = flow.Item{Args: benchArgs{}}
	}
	benchProducer(b, func(ctx context.Context, c *flow.Client) {
		for left := b.N; left > 0; left -= len(batch) {
			if _, err := c.EnqueueMany(ctx, batch[:min(left, len(batch))]...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnqueue measures one Enqueue call, the one most applications
// make, as BenchmarkEnqueueMany measures a job of a batch: ns/op is the
// call's wall time (a round trip, the script, both sides' work), and the
// CPU metrics what each side spends on it. No worker listens, so the
// call publishes no wake-up.
func BenchmarkEnqueue(b *testing.B) {
	benchProducer(b, func(ctx context.Context, c *flow.Client) {
		for range b.N {
			if _, err := c.Enqueue(ctx, benchArgs{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchProducer times enqueue, which enqueues b.N jobs with a client of
// its own namespace (whose queue layout is read before the timer starts),
// and reports each side's CPU per job.
func benchProducer(b *testing.B, enqueue func(context.Context, *flow.Client)) {
	ctx := context.Background()
	rdb := env.Server.Client()
	defer rdb.Close()
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: redistest.NewNamespace(b)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, benchArgs{}); err != nil { // the queue's layout, read once
		b.Fatal(err)
	}
	timeCPU(b, rdb, func() { enqueue(ctx, c) })
}

// timeCPU times run, which does b.N jobs, and reports each side's CPU per
// job and the allocations.
func timeCPU(b *testing.B, rdb *redis.Client, run func()) {
	b.ReportAllocs()
	goCPU, redisCPU := testkit.ProcessCPU(b), testkit.ServerCPU(b, rdb)
	b.ResetTimer()
	run()
	b.StopTimer()
	b.ReportMetric(float64(testkit.ProcessCPU(b)-goCPU)/float64(b.N), "go-cpu-ns/job")
	b.ReportMetric(float64(testkit.ServerCPU(b, rdb)-redisCPU)/float64(b.N), "redis-cpu-ns/job")
}

// BenchmarkPing is BenchmarkEnqueue's yardstick: one PING per op, the
// round trip and the socket work every call pays on both sides, in the
// same process, client and server as the enqueue benchmarks, so that
// their difference is what an Enqueue call costs beyond a round trip.
func BenchmarkPing(b *testing.B) {
	ctx := context.Background()
	rdb := env.Server.Client()
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	timeCPU(b, rdb, func() {
		for range b.N {
			if err := rdb.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
