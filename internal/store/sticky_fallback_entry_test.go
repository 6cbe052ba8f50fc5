package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestStickyFallbackLeavesPinList: a pinned job handed to every worker by
// its After fallback leaves its worker's pin list, so that the list of a
// worker that never comes back does not keep its entries for ever; the
// job runs on another worker. A helper's audit found the entry left
// there, stale, for good.
func TestStickyFallbackLeavesPinList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			gone := store.Sticky{Worker: "gone", Mode: "a", After: time.Minute}
			f.enqueue(store.NewJob{Local: "p1", Sticky: gone}, store.NewJob{Local: "p2", Sticky: gone})
			pins := f.p.Pinned("gone")
			if n := f.rdb.LLen(f.ctx, pins).Val(); n != 2 {
				t.Fatalf("pin list holds %d entries, want 2", n)
			}
			f.clk.Advance(time.Minute)
			res := f.claim(10, "other")
			if got := locals(res.Jobs); len(got) != 2 || !got["p1"] || !got["p2"] {
				t.Fatalf("after the fallback another worker claimed %v, want both pinned jobs", got)
			}
			if n := f.rdb.LLen(f.ctx, pins).Val(); n != 0 {
				t.Errorf("the absent worker's pin list holds %d entries after the fallback, want none", n)
			}
		})
	}
}
