package flow_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type hotStageParent struct{}

func (hotStageParent) Kind() string { return "hot-stage-parent" }

type hotStageKid struct{ N int }

func (hotStageKid) Kind() string { return "hot-stage-kid" }

// pausedProbes counts reads of the paused flags of partitions past 0 of
// one queue (PartitionsBeyond's probes).
type pausedProbes struct {
	prefix string
	n      atomic.Int64
}

func (h *pausedProbes) count(cmd redis.Cmder) {
	a := cmd.Args()
	if len(a) == 2 && strings.EqualFold(fmt.Sprint(a[0]), "get") {
		k := fmt.Sprint(a[1])
		if strings.HasPrefix(k, h.prefix) && strings.HasSuffix(k, "}:paused") && !strings.HasPrefix(k, h.prefix+"0}") {
			h.n.Add(1)
		}
	}
}
func (*pausedProbes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pausedProbes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *pausedProbes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

// TestSecondStageSpawnReadsNoRetiredFlags: a two-stage fan-out (spawn,
// join, spawn again) into a queue of one partition that was never resized.
// The second spawn runs in an attempt after the first (the parent was
// claimed again when its children finished: Fence 2), so placedBefore
// runs; a queue the process knows as never resized costs it nothing. A
// review found 2c74e9b read 16 partition flags (and 16 data model keys)
// per child queue there, a round trip on the ordinary path of every
// multi-stage workflow.
func TestSecondStageSpawnReadsNoRetiredFlags(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	reg := flow.NewRegistry()
	done := make(chan struct{}, 1)
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[hotStageKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, j *flow.Job[hotStageParent]) error {
		a, err := flow.Spawn(ctx, "a", flow.Item{Args: hotStageKid{1}, Opts: []flow.EnqueueOption{flow.WithQueue("k1")}})
		if err != nil {
			return err
		}
		if _, err := flow.Join[struct{}](ctx, a, flow.CollectAll); err != nil {
			return err
		}
		if _, err := flow.Spawn(ctx, "b", flow.Item{Args: hotStageKid{2}, Opts: []flow.EnqueueOption{flow.WithQueue("k1")}}); err != nil {
			return err
		}
		done <- struct{}{}
		return nil
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	probes := &pausedProbes{prefix: strings.TrimSuffix(keys.Partition{NS: ns, Queue: "k1", Index: 1}.Tag(), "1}")}
	hooked := realRedis(t)
	hooked.AddHook(probes)
	testkit.StartWorker(t, hooked, reg, runtime.Options{Namespace: ns, Queues: map[string]int{"parents": 1, "k1": 1}, Concurrency: 2}, nil)
	_, err = c.Enqueue(ctx, hotStageParent{}, flow.WithQueue("parents"))
	testkit.Must(t, err)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the parent did not finish")
	}
	if n := probes.n.Load(); n > 0 {
		t.Errorf("a second-stage spawn into a 1-partition queue that never shrank read %d paused/retired flags of its partitions (PartitionsBeyond): a round trip on an ordinary path", n)
	}
}
