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

// TestRefusedGrowthRetiresNoJob: a queue of 4 is shrunk to 2; a growth back
// to 4 takes partitions 2 and 3 back (paused), and while it is about to
// record, a producer still on the count 4 (it read it before the shrink,
// as TestCancelledGrowthKeepsRetired's "later") enqueues to partition 3,
// which takes the job; then the growth's lock lapses and it is refused.
// retireGrown retires the partitions beyond the layout as a shrink does,
// and checks them: 3 holds a job, so it stays open (paused) and the error
// says so. A review found it retired with the job in it: flow's
// placedBefore takes a retired partition for one a shrink emptied, so a
// Spawn child found there was kept as added and never ran.
func TestRefusedGrowthRetiresNoJob(t *testing.T) {
	t.Parallel()
	const q = "grj"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	later, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	key := ""
	for i := 0; key == ""; i++ {
		r, err := later.Enqueue(ctx, email{To: "x"}, flow.WithQueue(q), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		ok(t, err)
		if strings.HasPrefix(r.ID, q+":3:") {
			key = "k" + strconv.Itoa(i)
		}
		ok(t, a.ops.DeleteJob(ctx, r.ID))
	}
	ok(t, a.ops.PauseQueue(ctx, q))
	ok(t, a.ops.ResizeQueue(ctx, q, 2))

	var landed string
	other := env.Client(t)
	other.AddHook(&beforeResizeCAS{fn: func() {
		r, err := later.Enqueue(context.Background(), email{To: "in the window"}, flow.WithQueue(q), flow.WithPartitionKey(key))
		if err == nil {
			landed = r.ID
		}
		a.st.Client().Del(context.Background(), keys.ResizeLock(a.ns, q))
	}})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	if err := admin.New(oc).ResizeQueue(ctx, q, 4); !errors.Is(err, admin.ErrResizeRefused) {
		t.Fatalf("the growth whose lock lapsed: %v, want ErrResizeRefused", err)
	}
	if landed == "" {
		t.Skip("the producer's enqueue in the window was refused: nothing to check")
	}
	counts, err := a.st.StateCounts(ctx, []keys.Partition{{NS: a.ns, Queue: q, Index: 3}})
	ok(t, err)
	var held int64
	for _, n := range counts[0] {
		held += n
	}
	if f := a.flag(q, 3); f == "r" && held > 0 {
		t.Errorf("partition 3 retired again by the refused growth while it holds %d job(s) (%s, %v): a retired partition past the count is taken for one a shrink emptied",
			held, landed, counts[0])
	}
}
