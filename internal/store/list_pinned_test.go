package store_test

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// pinWorkers is the partition's index of pin lists (lua/lib_ready.lua
// PIN_WORKERS), without the mark of a complete index (the member "").
func (f *fixture) pinWorkers() []string {
	f.t.Helper()
	var out []string
	for _, w := range f.rdb.ZRange(f.ctx, f.p.PinWorkers(), 0, -1).Val() {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// TestListAvailablePinned: a listing of available jobs lists those pinned
// to a worker (sticky routing) after the shared lists', each once across
// pages of any size, as QueueStats counts them; the index of pin lists it
// reads holds exactly the workers whose lists hold entries, as claims,
// fallbacks, cancels and reroutes empty them. An operator looking for jobs
// stranded on a worker that is gone found none of them.
func TestListAvailablePinned(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			w1 := store.Sticky{Worker: "w1", Mode: "w"}
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b", Sticky: w1},
				store.NewJob{Local: "c", Sticky: store.Sticky{Worker: "w2", Mode: "a", After: time.Hour}},
				store.NewJob{Local: "d", Sticky: w1}, store.NewJob{Local: "e", Priority: 3},
				store.NewJob{Local: "f", Sticky: store.Sticky{Worker: "w3", Mode: "f", After: time.Minute}})
			want := []string{"a", "b", "c", "d", "e", "f"}
			for _, n := range []int{1, 2, 3, 10} {
				got := f.listAll("available", n)
				sorted := slices.Clone(got)
				sort.Strings(sorted)
				if !slices.Equal(sorted, want) {
					t.Fatalf("pages of %d listed %v, want each of %v once", n, got, want)
				}
				if !slices.Equal(got[:2], []string{"e", "a"}) {
					t.Errorf("pages of %d listed %v, want the shared lists' jobs first", n, got)
				}
			}
			// a pinned job sorts after every shared one, across partitions
			page, err := f.st.List(f.ctx, f.p, "available", "", 10, 100, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				if pinned := e.Job.Local != "a" && e.Job.Local != "e"; pinned != (e.Key < 0) {
					t.Errorf("%s sorts at %v", e.Job.Local, e.Key)
				}
			}
			if got := f.pinWorkers(); !slices.Equal(got, []string{"w1", "w2", "w3"}) {
				t.Fatalf("pin index %v, want w1 w2 w3", got)
			}
			// w1 claims its own: its list is gone, and so is its entry
			if got := locals(f.claim(2, "w1").Jobs); len(got) != 2 || !got["b"] || !got["d"] {
				t.Fatalf("w1 claimed %v, want b and d", got)
			}
			// w3's fallback fails f (its list is left: unlist)
			f.clk.Advance(time.Minute)
			if got := locals(f.claim(10, "nobody").Jobs); len(got) != 2 || !got["a"] || !got["e"] {
				t.Fatalf("another worker claimed %v, want a and e", got)
			}
			if got := f.pinWorkers(); !slices.Equal(got, []string{"w2"}) {
				t.Errorf("pin index %v after w1's claim and w3's fallback, want w2", got)
			}
			// c is rerouted to w4, then cancelled
			if _, err := f.st.Reroute(f.ctx, f.ref("c"), store.Sticky{Worker: "w4", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if got := f.pinWorkers(); !slices.Equal(got, []string{"w4"}) {
				t.Errorf("pin index %v after a reroute to w4, want w4", got)
			}
			if got := f.listAll("available", 1); !slices.Equal(got, []string{"c"}) {
				t.Errorf("listed %v, want c", got)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("c"), time.Hour); err != nil {
				t.Fatal(err)
			}
			if got := f.pinWorkers(); len(got) != 0 {
				t.Errorf("pin index %v after every pinned job left, want none", got)
			}
		})
	}
}

// TestListAvailablePinnedBeforeIndex: pin lists an earlier release made,
// with no index, are not found by a worker's maintenance pass (its loop
// makes no scan that could fail) but by IndexPinLists, which a listing of
// available jobs calls first: it marks the index complete, and the
// listing then lists their jobs.
func TestListAvailablePinnedBeforeIndex(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b", Sticky: store.Sticky{Worker: "gone", Mode: "w"}},
				store.NewJob{Local: "c", Sticky: store.Sticky{Worker: "gone-2", Mode: "w"}})
			f.rdb.Del(f.ctx, f.p.PinWorkers()) // as an earlier release left it
			// a stale pin list of a worker whose jobs left it is not indexed
			f.rdb.Del(f.ctx, f.p.Pinned("gone-2"))
			if got := f.listAll("available", 10); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("listed %v before the repair, want a alone (the pin lists are not indexed)", got)
			}
			if _, err := f.st.Maintain(f.ctx, f.p, 10, 10, 10); err != nil {
				t.Fatal(err)
			}
			if n := f.rdb.Exists(f.ctx, f.p.PinWorkers()).Val(); n != 0 {
				t.Fatalf("a maintenance pass indexed pin lists: %q", f.rdb.ZRange(f.ctx, f.p.PinWorkers(), 0, -1).Val())
			}
			if err := f.st.IndexPinLists(f.ctx, f.p); err != nil {
				t.Fatal(err)
			}
			if got := f.listAll("available", 10); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("listed %v after the repair, want a and b", got)
			}
			if got := f.rdb.ZRange(f.ctx, f.p.PinWorkers(), 0, -1).Val(); !slices.Equal(got, []string{"", "gone"}) {
				t.Errorf("pin index %q, want the mark of a complete index and gone", got)
			}
		})
	}
}

// TestPinIndexedAgainAfterEmptied: the index of pin lists is written once
// per worker per call (push_ready), and a call's record of what it wrote
// is its own: a worker whose list a claim emptied (leaving the index) is
// indexed again by the next call that pins a job to it, and that job is
// listed.
func TestPinIndexedAgainAfterEmptied(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			pinned := func(id string) store.NewJob {
				return store.NewJob{Local: id, Sticky: store.Sticky{Worker: "w", Mode: "w"}}
			}
			f.enqueue(pinned("a"), pinned("b"))
			if got := f.pinWorkers(); !slices.Equal(got, []string{"w"}) {
				t.Fatalf("pin index %q after two pins in one call, want [w]", got)
			}
			if res := f.claim(2, "w"); len(res.Jobs) != 2 {
				t.Fatalf("w claimed %d, want 2", len(res.Jobs))
			}
			if got := f.pinWorkers(); len(got) != 0 {
				t.Fatalf("pin index %q after w's list was emptied, want none", got)
			}
			f.enqueue(pinned("c"))
			if got := f.listAll("available", 10); !slices.Equal(got, []string{"c"}) {
				t.Errorf("listed %v, want c (pinned to w again)", got)
			}
		})
	}
}
