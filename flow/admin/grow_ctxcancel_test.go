package admin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// TestGrowthCancelledByCallerKeepsRetired is TestCancelledGrowthKeepsRetired
// with the growth cancelled by its caller (a context cancelled, or whose
// deadline passed, just before the compare and set) instead of by a lapsed
// lock. A queue of 4 partitions is shrunk to 2; a growth back to 4 takes
// partitions 2 and 3 back (paused), and its context ends before it records
// the layout. The layout is still 2, so partitions 2 and 3 must be retired
// again, as they are when the lock lapses: a producer still on the count 4
// must be refused there rather than leave a job where no worker of the
// 2-partition layout claims. Found by TestChaosResize (internal/chaos).
func TestGrowthCancelledByCallerKeepsRetired(t *testing.T) {
	t.Parallel()
	const q = "gcc"
	gctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// the growth's context ends just before it records its layout
	a, stale, key, grow := interleaved(t, q, func(*fixture) { cancel() })
	ctx := context.Background()
	ok(t, a.ops.ResizeQueue(ctx, q, 2))
	err := grow.ResizeQueue(gctx, q, 4)
	if err == nil {
		t.Fatal("the growth cancelled before its compare and set: no error")
	}
	t.Logf("the cancelled growth: %v", err)
	qi, err := a.ops.QueueLayout(ctx, q)
	ok(t, err)
	if qi.Partitions != 2 {
		t.Fatalf("layout after the cancelled growth: %d partitions, want 2", qi.Partitions)
	}
	for i := 2; i < 4; i++ {
		if f := a.flag(q, i); f != "r" {
			t.Errorf("partition %d, outside the layout of 2, has flag %q after the cancelled growth, want retired (r)", i, f)
		}
	}
	r, err := stale.Enqueue(ctx, email{To: "lost"}, flow.WithQueue(q), flow.WithPartitionKey(key))
	if !errors.Is(err, flow.ErrLayoutMismatch) {
		t.Errorf("a producer on the old count after the cancelled growth: %+v, %v; want ErrLayoutMismatch (its job is on a partition no worker of the 2-partition layout claims)", r, err)
	}
}
