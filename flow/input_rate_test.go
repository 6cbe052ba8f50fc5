package flow_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestRateLimitHugePer: a rate of 1 job per time.Duration(math.MaxInt64)
// (burst 1) lets one job start; msUp overflows on that Per, the bucket is
// stored with a negative period, read as no bucket, and every job runs
// unlimited.
func TestRateLimitHugePer(t *testing.T) {
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	var ran atomic.Int64
	_ = flow.Register(reg, func(context.Context, *flow.Job[mailJob]) error { ran.Add(1); return nil })
	c, ns := newClient(t, rdb, reg)
	rl := flow.WithRateLimit("slow", flow.RateLimit{Jobs: 1, Per: time.Duration(math.MaxInt64)})
	var items []flow.Item
	for i := range 5 {
		items = append(items, flow.Item{Args: mailJob{I: i}, Opts: []flow.EnqueueOption{rl}})
	}
	if _, err := c.EnqueueMany(context.Background(), items...); err != nil {
		t.Fatal(err)
	}
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) && ran.Load() < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	if n := ran.Load(); n > 1 {
		t.Fatalf("%d jobs of rate class 1 per %s (burst 1) ran; want 1", n, time.Duration(math.MaxInt64))
	}
}
