package admin_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
)

// TestResizeBringsBackWhatAnUnrecordedShrinkRetired: a shrink from 4 to 2
// whose lock lapsed before it recorded its layout leaves partitions 2 and
// 3 retired in a layout of 4 (its caller saw an error). A later resize to
// another count that keeps them (a growth to 6, a shrink to 3) holds the
// lock as a resize to the current count does, and brings them back
// (paused) with its layout: before, it recorded a layout with retired
// partitions in it, said it was done, and they refused every enqueue
// placed there ("being taken away by a resize", though none was under
// way) until someone resumed the queue.
func TestResizeBringsBackWhatAnUnrecordedShrinkRetired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		to   int
		kept []int // the partitions the shrink retired that the resize keeps
	}{{"grow", 6, []int{2, 3}}, {"shrink", 3, []int{2}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := "rrl" + tc.name
			rdb := env.Client(t)
			a := newAdmin(t, rdb, map[string]int{q: 4})
			ctx := context.Background()
			ok(t, a.ops.DeleteJob(ctx, a.enqueue(email{To: "first"}, flow.WithQueue(q)))) // registers 4 partitions
			ok(t, a.ops.PauseQueue(ctx, q))

			other := env.Client(t)
			other.AddHook(&beforeResizeCAS{fn: func() {
				a.st.Client().Del(context.Background(), keys.ResizeLock(a.ns, q)) // it lapsed
			}})
			oc, err := flow.NewClient(other, flow.ClientOptions{Namespace: a.ns})
			ok(t, err)
			if err := admin.New(oc).ResizeQueue(ctx, q, 2); !errors.Is(err, admin.ErrResizeRefused) {
				t.Fatalf("the shrink whose lock lapsed: %v, want ErrResizeRefused", err)
			}
			if r, err := a.ops.RetiredPartitions(ctx, q); err != nil || len(r) != 2 {
				t.Fatalf("retired after the unrecorded shrink: %v %v, want [2 3]", r, err)
			}

			ok(t, a.ops.ResizeQueue(ctx, q, tc.to))
			qi, err := a.ops.QueueLayout(ctx, q)
			ok(t, err)
			if qi.Partitions != tc.to {
				t.Fatalf("layout: %d partitions, want %d", qi.Partitions, tc.to)
			}
			retired, err := a.ops.RetiredPartitions(ctx, q)
			ok(t, err)
			if len(retired) != 0 {
				t.Errorf("the resize to %d said done, and left partitions %v of its layout retired", tc.to, retired)
			}
			for _, i := range tc.kept {
				if f := a.flag(q, i); f != "1" {
					t.Errorf("partition %d has flag %q after the resize, want paused (1)", i, f)
				}
			}
		})
	}
}
