package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestFailAfterUnlistsPinEntry: a pinned job whose FailAfter fallback
// falls due is archived ('sticky_unavailable') by the next claim
// (lib_lifecycle.lua promote_pinned, the 'f' branch), and its entry
// leaves its worker's pin list, as the After branch takes it off: a
// worker that never comes back would keep it for ever (and a redrive
// lists the job there a second time). Found by TestFlowModel seed
// 1796561168760446964 (miniredis, step 106).
func TestFailAfterUnlistsPinEntry(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Second}},
				store.NewJob{Local: "x"})
			f.clk.Advance(2 * time.Second)
			res := f.claim(1, "w") // archives j, leases x
			if len(res.Parked) != 1 || res.Parked[0].Local != "j" || res.Parked[0].Reason != "sticky_unavailable" {
				t.Fatalf("parked %v, want j sticky_unavailable", res.Parked)
			}
			pin, err := f.rdb.LRange(f.ctx, f.p.Pinned("gone"), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			stale := slices.Contains(pin, "j")
			// redriven, it is listed on the pin list anew
			if _, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"j"}); err != nil {
				t.Fatal(err)
			}
			after, _ := f.rdb.LRange(f.ctx, f.p.Pinned("gone"), 0, -1).Result()
			if stale {
				t.Fatalf("archived j is still listed on its worker's pin list: %v; redriven, the list is %v", pin, after)
			}
		})
	}
}
