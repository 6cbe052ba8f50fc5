package admin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestRefusedGrowthLeavesNoGapInRetired: a queue of 8 partitions is shrunk
// to 2 (partitions 2..7 retired; markers of jobs from before may be on
// any of them). A growth to 4 takes 2 and 3 back and, before it records,
// another holder takes the resize lock (a resume, or a resize after the
// lock lapsed) and keeps it: the growth is refused, and retireGrown,
// which cannot take the lock again, leaves 2 and 3 paused, not retired.
// store.PartitionsBeyond still lists 4..7 past them: a Spawn step run
// again, or a scheduler's abandoned tick, probes every partition an
// earlier layout named. A review found the first version stopped at the
// first partition not retired, and listed none of 4..7.
func TestRefusedGrowthLeavesNoGapInRetired(t *testing.T) {
	t.Parallel()
	const q = "gg"
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{q: 8})
	ctx := context.Background()
	ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 8 partitions
	ok(t, a.ops.PauseQueue(ctx, q))
	ok(t, a.ops.ResizeQueue(ctx, q, 2))

	other := env.Client(t)
	other.AddHook(&beforeResizeCAS{fn: func() {
		a.st.Client().Set(context.Background(), keys.ResizeLock(a.ns, q), "another-holder", 0)
	}})
	oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	if err := admin.New(oc).ResizeQueue(ctx, q, 4); !errors.Is(err, admin.ErrResizeRefused) {
		t.Fatalf("the growth whose lock was taken: %v, want ErrResizeRefused", err)
	} else {
		t.Logf("growth refused: %v", err)
	}
	flags := make([]string, 8)
	for i := range flags {
		flags[i] = a.flag(q, i)
	}
	t.Logf("flags after the refused growth: %q", flags)
	got, _, err := a.st.PartitionsBeyond(ctx, a.ns, q, 2)
	ok(t, err)
	seen := map[int]bool{}
	for _, p := range got {
		seen[p.Index] = true
	}
	for i := 4; i < 8; i++ {
		if !seen[i] {
			t.Errorf("PartitionsBeyond(2) = %v: partition %d, retired by the shrink, is not listed (a gap at the partitions the refused growth left open)", got, i)
		}
	}
}
