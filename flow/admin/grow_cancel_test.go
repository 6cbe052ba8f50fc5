package admin_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestCancelledGrowthKeepsRetired: a queue of 4 partitions is
// shrunk to 2 (partitions 2 and 3 retired, so a producer still on the old
// count is refused there). A growth back to 4 then takes partitions 2 and
// 3 back (paused) before it records its layout, and is cancelled: its
// lock lapsed (a minute, or a resume took it) before the compare and set,
// and it is refused, "nothing was recorded". The layout is still 2, and
// partitions 2 and 3 are retired again: a producer on the old count is
// refused there. A helper's audit found them left open: the producer
// enqueued to partition 3 with no error, and its job sat where no worker
// of the 2-partition layout ever claims.
func TestCancelledGrowthKeepsRetired(t *testing.T) {
	t.Parallel()
	const q = "gc"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	stale, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	key := ""
	for i := 0; key == ""; i++ {
		r, err := stale.Enqueue(ctx, email{To: "x"}, flow.WithQueue(q), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		ok(t, err)
		if strings.HasPrefix(r.ID, q+":3:") {
			key = "k" + strconv.Itoa(i)
		}
		ok(t, a.ops.DeleteJob(ctx, r.ID))
	}
	// a second producer that read the count 4 and enqueues nothing until
	// after the growth below (the first re-reads the count once refused)
	later, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	r0, err := later.Enqueue(ctx, email{To: "y"}, flow.WithQueue(q), flow.WithPartitionKey(key))
	ok(t, err)
	ok(t, a.ops.DeleteJob(ctx, r0.ID))
	ok(t, a.ops.PauseQueue(ctx, q))
	ok(t, a.ops.ResizeQueue(ctx, q, 2))
	if _, err := stale.Enqueue(ctx, email{To: "refused"}, flow.WithQueue(q), flow.WithPartitionKey(key)); !errors.Is(err, flow.ErrLayoutMismatch) {
		t.Fatalf("after the shrink, a producer on the old count: %v, want ErrLayoutMismatch", err)
	}

	// the growth's lock lapses just before it records its layout
	other := env.Client(t)
	other.AddHook(&beforeResizeCAS{fn: func() {
		a.st.Client().Del(context.Background(), keys.ResizeLock(a.ns, q))
	}})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	grow := admin.New(oc)
	if err := grow.ResizeQueue(ctx, q, 4); !errors.Is(err, admin.ErrResizeRefused) {
		t.Fatalf("the growth whose lock lapsed: %v, want ErrResizeRefused", err)
	}
	qi, err := a.ops.QueueLayout(ctx, q)
	ok(t, err)
	if qi.Partitions != 2 {
		t.Fatalf("layout after the refused growth: %d partitions, want 2", qi.Partitions)
	}
	for i := 2; i < 4; i++ {
		if f := a.flag(q, i); f != "r" {
			t.Errorf("partition %d, outside the layout of 2, has flag %q after the refused growth, want retired (r)", i, f)
		}
	}
	r, err := later.Enqueue(ctx, email{To: "lost"}, flow.WithQueue(q), flow.WithPartitionKey(key))
	if !errors.Is(err, flow.ErrLayoutMismatch) {
		t.Errorf("a producer on the old count after the refused growth: %+v, %v; want ErrLayoutMismatch (its job is on a partition no worker of the 2-partition layout claims)", r, err)
	}
}
