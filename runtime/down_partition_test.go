package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type downPartArgs struct{}

func (downPartArgs) Kind() string { return "down_part" }

// TestDownPartitionStarvesNoOther: a worker whose claims on one or two
// of its queues fail every time (their cluster node is down) goes on
// claiming from the others. Before, the fetch loop sent the failed claim
// again and again, sleeping between tries, and the healthy queue's job
// waited as long as the other partition was down; and a failed claim
// waiting to be sent again must hold none of the worker's slots, or two
// down partitions could hold them all (Concurrency 4, ClaimBatch 2).
func TestDownPartitionStarvesNoOther(t *testing.T) {
	t.Parallel()
	for _, down := range [][]string{{"qa"}, {"qa", "qc"}} {
		t.Run(fmt.Sprint(len(down)), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			reg := flow.NewRegistry()
			if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[downPartArgs]) error { return nil }); err != nil {
				t.Fatal(err)
			}
			var hooks []*testkit.FailCalls
			for _, q := range down {
				h := &testkit.FailCalls{Script: lua.Claim, Part: keys.Partition{NS: e.NS, Queue: q, Index: 0}}
				e.RDB.AddHook(h)
				hooks = append(hooks, h)
			}
			e.StartWorker(reg, runtime.Options{Queues: map[string]int{"qa": 1, "qb": 1, "qc": 1}, Lease: time.Minute,
				Concurrency: 4, ClaimBatch: 2})
			redistest.Within(t, testkit.Timeout, "claims on the down queues to fail", func() (bool, string) {
				for _, h := range hooks {
					if h.Calls() < 3 {
						return false, fmt.Sprint(h.Calls(), " calls")
					}
				}
				return true, ""
			})
			id := e.Enqueue(downPartArgs{}, flow.WithQueue("qb"))
			if j := e.WaitState(id, flow.StateCompleted); j.Attempt != 0 {
				t.Errorf("qb's job: attempt %d", j.Attempt)
			}
		})
	}
}
