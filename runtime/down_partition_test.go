package runtime_test

import (
	"context"
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

// TestDownPartitionStarvesNoOther: a worker serving two queues whose
// claims on one of them fail every time (its cluster node is down) goes
// on claiming from the other. Before, the fetch loop sent the failed
// claim again and again, sleeping between tries, and the healthy queue's
// job waited as long as the other partition was down.
func TestDownPartitionStarvesNoOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[downPartArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	down := &testkit.FailCalls{Script: lua.Claim, Part: keys.Partition{NS: e.NS, Queue: "qa", Index: 0}}
	e.RDB.AddHook(down)
	e.StartWorker(reg, runtime.Options{Queues: map[string]int{"qa": 1, "qb": 1}, Lease: time.Minute})
	redistest.Within(t, testkit.Timeout, "claims on qa to fail", func() (bool, string) {
		return down.Calls() >= 3, ""
	})
	id := e.Enqueue(downPartArgs{}, flow.WithQueue("qb"))
	if j := e.WaitState(id, flow.StateCompleted); j.Attempt != 0 {
		t.Errorf("qb's job: attempt %d", j.Attempt)
	}
}
