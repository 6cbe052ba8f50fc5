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

// TestRerouteLeavesOldPinList: an available job rerouted from a worker to
// another leaves the old worker's pin list, and the new worker claims it.
// A helper's audit found the entry left there, stale, for good.
func TestRerouteLeavesOldPinList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "gone", Mode: "w"}})
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "worker-b", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if n := f.rdb.LLen(f.ctx, f.p.Pinned("gone")).Val(); n != 0 {
				t.Errorf("the old worker's pin list holds %d entries after the reroute, want none", n)
			}
			if j := f.claimOne("worker-b"); j.Local != "j" {
				t.Errorf("worker B claimed %s, want j", j.Local)
			}
		})
	}
}
