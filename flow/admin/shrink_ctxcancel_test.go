package admin_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// cancelOnOutboxRead calls fn as the first pipeline that reads an outbox's
// length goes out (a shrink's emptiness check, after it retired the
// partitions it takes away).
type cancelOnOutboxRead struct {
	fired atomic.Bool
	fn    func()
}

func (*cancelOnOutboxRead) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (*cancelOnOutboxRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *cancelOnOutboxRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if strings.EqualFold(c.Name(), "xlen") && h.fired.CompareAndSwap(false, true) {
				h.fn()
			}
		}
		return next(ctx, cmds)
	}
}

// TestShrinkCancelledByCallerBringsBack: a shrink from 4 to 2 partitions
// whose caller's context ends while it checks the partitions it retired
// fails, and brings them back (paused, as they were) although that
// context has ended: left retired, the layout's partitions 2 and 3 would
// refuse every enqueue placed there until someone ran the resize again.
func TestShrinkCancelledByCallerBringsBack(t *testing.T) {
	t.Parallel()
	const q = "scc"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	ok(t, a.ops.PauseQueue(ctx, q))

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	other := env.Client(t)
	other.AddHook(&cancelOnOutboxRead{fn: cancel})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	if err := admin.New(oc).ResizeQueue(sctx, q, 2); err == nil {
		t.Fatal("the shrink cancelled during its check: no error")
	} else {
		t.Logf("the cancelled shrink: %v", err)
	}
	qi, err := a.ops.QueueLayout(ctx, q)
	ok(t, err)
	if qi.Partitions != 4 {
		t.Fatalf("layout after the cancelled shrink: %d partitions, want 4", qi.Partitions)
	}
	retired, err := a.ops.RetiredPartitions(ctx, q)
	ok(t, err)
	if len(retired) != 0 {
		t.Fatalf("partitions %v of the layout left retired after the cancelled shrink", retired)
	}
	for i := 2; i < 4; i++ {
		if f := a.flag(q, i); f != "1" {
			t.Errorf("partition %d has flag %q after the cancelled shrink, want paused (1)", i, f)
		}
	}
}
