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

// TestRefusedGrowthRetiresNoJobPastTheFirst: TestRefusedGrowthRetiresNoJob
// with the producer on the count 4 landing a job on both partitions 2 and
// 3 in the window: both stay open. A review found retireGrown returned at
// the first that held a job, leaving 3 retired with its job in it.
func TestRefusedGrowthRetiresNoJobPastTheFirst(t *testing.T) {
	t.Parallel()
	const q = "grj2"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 4})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
	later, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	keyOn := map[int]string{}
	for i := 0; keyOn[2] == "" || keyOn[3] == ""; i++ {
		r, err := later.Enqueue(ctx, email{To: "x"}, flow.WithQueue(q), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		ok(t, err)
		for _, p := range []int{2, 3} {
			if strings.HasPrefix(r.ID, q+":"+strconv.Itoa(p)+":") && keyOn[p] == "" {
				keyOn[p] = "k" + strconv.Itoa(i)
			}
		}
		ok(t, a.ops.DeleteJob(ctx, r.ID))
	}
	ok(t, a.ops.PauseQueue(ctx, q))
	ok(t, a.ops.ResizeQueue(ctx, q, 2))

	landed := map[int]string{}
	other := env.Client(t)
	other.AddHook(&beforeResizeCAS{fn: func() {
		for _, p := range []int{2, 3} {
			r, err := later.Enqueue(context.Background(), email{To: "in the window"}, flow.WithQueue(q), flow.WithPartitionKey(keyOn[p]))
			if err == nil {
				landed[p] = r.ID
			}
		}
		a.st.Client().Del(context.Background(), keys.ResizeLock(a.ns, q))
	}})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	if err := admin.New(oc).ResizeQueue(ctx, q, 4); !errors.Is(err, admin.ErrResizeRefused) {
		t.Fatalf("the growth whose lock lapsed: %v, want ErrResizeRefused", err)
	}
	if landed[2] == "" || landed[3] == "" {
		t.Skipf("the producer's enqueues in the window were refused (%v): nothing to check", landed)
	}
	for _, p := range []int{2, 3} {
		counts, err := a.st.StateCounts(ctx, []keys.Partition{{NS: a.ns, Queue: q, Index: p}})
		ok(t, err)
		var held int64
		for _, n := range counts[0] {
			held += n
		}
		if f := a.flag(q, p); f == "r" && held > 0 {
			t.Errorf("partition %d retired again by the refused growth while it holds %d job(s) (%s, %v)", p, held, landed[p], counts[0])
		}
	}
}
