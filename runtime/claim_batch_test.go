package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type bigBatchArgs struct{ N int }

func (bigBatchArgs) Kind() string { return "big_batch" }

// TestLargeClaimBatchOnMiniredis: a worker claiming 256 jobs a call on
// miniredis (the embedded demo, flowtest) runs every job once, none
// charged a crash. Each such claim once failed after leasing its jobs
// (packing its reply overflowed gopher-lua's registry at about 90 jobs):
// they ran only when the reaper took their leases back, as crashes.
func TestLargeClaimBatchOnMiniredis(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	// miniredis runs each 256-job claim in gopher-lua, under -race: on a
	// loaded machine one took past go-redis's 3 s read timeout (a CI run at
	// load 15), and its jobs' 2 s leases with it. A read allowed 15 s and
	// leases of 5 s keep to what the test checks: a claim that failed
	// after leasing would still show as jobs run only once their leases
	// ran out, charged a crash, well within testkit.Timeout (20 s).
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), ReadTimeout: 15 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	e := testkit.NewEnv(t, rdb, flow.ClientOptions{})
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[bigBatchArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const n = 600
	items := make([]flow.Item, n)
	for i := range items {
		items[i] = flow.Item{Args: bigBatchArgs{N: i}}
	}
	res, err := e.Client.EnqueueMany(context.Background(), items...)
	if err != nil {
		t.Fatal(err)
	}
	e.StartWorker(reg, runtime.Options{Concurrency: 256, ClaimBatch: 256, Lease: 5 * time.Second, MaintenanceInterval: 200 * time.Millisecond})
	for _, r := range res {
		if j := e.WaitState(r.ID, flow.StateCompleted); j.CrashAttempt != 0 || j.Attempt != 0 {
			t.Fatalf("%s completed after %d crashes and %d failed attempts, want none", r.ID, j.CrashAttempt, j.Attempt)
		}
	}
}
