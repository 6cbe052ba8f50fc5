package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// TestRetentionClearsBacklog: one maintenance pass deletes a backlog of
// expired jobs far larger than one sweep call's batch, so that Redis
// memory comes back after a burst instead of draining a hundred jobs a
// second. On a test clock, the worker runs the jobs; an hour later (their
// retention is a minute) its next maintenance pass, the only one in that
// hour, must delete them all.
func TestRetentionClearsBacklog(t *testing.T) {
	t.Parallel()
	const jobs = 1500
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	ctx := context.Background()
	reg := flow.NewRegistry()
	must(t, flow.Register(reg, func(context.Context, *flow.Job[workArgs]) error { return nil }))
	items := make([]flow.Item, jobs)
	for i := range items {
		items[i] = flow.Item{Args: workArgs{N: i}}
	}
	if _, err := e.client.EnqueueMany(ctx, items...); err != nil {
		t.Fatal(err)
	}
	opts := runtime.Options{Concurrency: 50, RetainCompleted: time.Minute, MaintenanceInterval: time.Hour, Clock: clk}
	e.startWorker(reg, opts)
	count := func(state string) (int64, string) {
		n, err := e.rdb.HGet(ctx, e.partition().Stats(), state).Int64()
		if err != nil && err.Error() != "redis: nil" {
			t.Fatal(err)
		}
		return n, fmt.Sprintf("%d %s", n, state)
	}
	eventually(t, "every job completed", func() (bool, string) {
		n, s := count(flow.StateCompleted)
		return n == jobs, s
	})
	clk.Advance(time.Hour)
	eventually(t, "the next maintenance pass deleted every job", func() (bool, string) {
		n, s := count(flow.StateCompleted)
		if n != 0 {
			return false, s
		}
		left, err := e.rdb.Keys(ctx, e.partition().Job("*")).Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(left) == 0, fmt.Sprintf("%d job hashes left", len(left))
	})
}
