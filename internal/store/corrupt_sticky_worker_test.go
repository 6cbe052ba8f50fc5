package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A claim drops a list entry whose job is routed elsewhere: a reroute
// leaves its old entry behind, on the old worker's pin list or the shared
// list, where the worker's claims skip it. A sticky_worker changed without
// a reroute (corrupt data: '', '-1', 'x', '1e400'...) made the job's only
// entry look like such a stale one, and the claim dropped it: the job
// stayed available on no list, lost. These tests hold the rule that tells
// the two apart from what a claim reads of the job anyway (its hash):
//   - a pin needs a worker that is no empty string and a mode (enqueue and
//     reroute write both), so on the shared list a job whose worker alone
//     was written is not pinned: it is claimed there;
//   - a reroute records the pin lists it took the job off
//     (F.sticky_left), so on a pin list an entry of a job routed
//     elsewhere with no such record is its only one: the claim moves it
//     where its routing says, never drops it;
//   - an entry a reroute really left is still skipped, and the job is
//     listed once.

var corruptWorkers = []string{"", "-1", "x", "1e400", "nan"}

// TestCorruptStickyWorkerOnSharedList: an unpinned job on the shared list
// whose sticky_worker is corrupt is claimed from there.
func TestCorruptStickyWorkerOnSharedList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range corruptWorkers {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "bad"}, store.NewJob{Local: "c"})
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldStickyWorker, v)
				got := f.claimed("n1")
				if !slices.Equal(got, []string{"a", "bad", "c"}) {
					t.Errorf("claimed %v, want a, bad, c (bad is %q, list 0 %v)", got, f.rawState("bad"), f.availableOrder(0))
				}
			})
		}
	}
}

// TestCorruptStickyWorkerOnPinList: a job pinned to wb whose
// sticky_worker is then corrupt goes where that says: an empty worker
// pins nothing, and wb's claim, which meets it first, takes it from the
// shared list; another name is a worker's, whose pin list it goes to the
// front of, and whose claim takes it.
func TestCorruptStickyWorkerOnPinList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range corruptWorkers {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				pin := store.Sticky{Worker: "wb", Mode: "w"}
				f.enqueue(store.NewJob{Local: "p1", Sticky: pin}, store.NewJob{Local: "bad", Sticky: pin},
					store.NewJob{Local: "p2", Sticky: pin})
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldStickyWorker, v)
				got := f.leased("wb")
				if v == "" {
					if got != "[p1 p2 bad]" {
						t.Errorf("wb leased %s, want p1, p2, then bad from the shared list", got)
					}
					return
				}
				if got != "[p1 p2]" {
					t.Errorf("wb leased %s, want p1 and p2", got)
				}
				if l := f.list(f.p.Pinned(v)); !slices.Equal(l, []string{"bad"}) {
					t.Errorf("%s's pin list %v, want bad (it is %q)", v, l, f.rawState("bad"))
				}
				if got := f.leased(v); got != "[bad]" {
					t.Errorf("%s leased %s, want bad", v, got)
				}
			})
		}
	}
}

// TestReroutedEntryStaysStale: the entries a reroute leaves behind are
// still skipped, and the job is listed once, on its new worker's list:
// off a pin list (recorded in F.sticky_left), off the shared list, and
// back to a worker it left (whose list is live again).
func TestReroutedEntryStaysStale(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "pinned", Sticky: store.Sticky{Worker: "wb", Mode: "w"}},
				store.NewJob{Local: "shared"})
			for id, to := range map[string]string{"pinned": "wc", "shared": "wd"} {
				if _, err := f.st.Reroute(f.ctx, f.ref(id), store.Sticky{Worker: to, Mode: "a", After: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			if v := f.rdb.HGet(f.ctx, f.p.Job("pinned"), keys.FieldStickyLeft).Val(); v != "wb" {
				t.Errorf("pinned left %q, want wb", v)
			}
			if got := f.leased("wb"); got != "[]" {
				t.Errorf("wb leased %s, want none: its entry is stale", got)
			}
			if got := f.leased("w"); got != "[]" {
				t.Errorf("w leased %s, want none: the shared entry is stale", got)
			}
			for w, id := range map[string]string{"wb": "", "wc": "pinned", "wd": "shared"} {
				want := []string{id}
				if id == "" {
					want = nil
				}
				if l := f.list(f.p.Pinned(w)); !slices.Equal(l, want) {
					t.Errorf("%s's pin list %v, want %v", w, l, want)
				}
			}
			// back to wb: wb's list is live again, and the record names wc
			if _, err := f.st.Reroute(f.ctx, f.ref("pinned"), store.Sticky{Worker: "wb", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Job("pinned"), keys.FieldStickyLeft).Val(); v != "wc" {
				t.Errorf("pinned left %q, want wc", v)
			}
			if got := f.leased("wc"); got != "[]" {
				t.Errorf("wc leased %s, want none: its entry is stale", got)
			}
			if got := f.leased("wb"); got != "[pinned]" {
				t.Errorf("wb leased %s, want pinned", got)
			}
		})
	}
}
