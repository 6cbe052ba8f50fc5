package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestWaitPinnedJobLeavesPinxWithItsList: a job pinned with sticky.Wait
// and a deadline that leaves its pin list other than by a claim
// (cancelled, deleted, debounced, rerouted off its worker) leaves pinx
// too. Its entry stayed until the deadline, which may be days ahead: every
// claim of the partition, of every worker, read and promoted the timed
// indexes (no quiet claim) until then, for a job long gone.
func TestWaitPinnedJobLeavesPinxWithItsList(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			wait := store.Sticky{Worker: "gone", Mode: "w"}
			dl := f.clk.Now().Add(24 * time.Hour)
			f.enqueue(store.NewJob{Local: "c", Sticky: wait, Deadline: dl},
				store.NewJob{Local: "d", Sticky: wait, Deadline: dl},
				store.NewJob{Local: "r", Sticky: wait, Deadline: dl},
				store.NewJob{Local: "u", Sticky: wait, Deadline: dl, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}})
			pinx := func() []string {
				t.Helper()
				l, err := f.rdb.ZRange(f.ctx, f.p.PinDeadlines(), 0, -1).Result()
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			if got := pinx(); len(got) != 4 {
				t.Fatalf("pinx %v, want the four jobs", got)
			}
			if _, err := f.st.Cancel(f.ctx, f.ref("c"), retainCancelled); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Delete(f.ctx, f.ref("d")); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Reroute(f.ctx, f.ref("r"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			f.duplicate(store.NewJob{Local: "u2", Delay: time.Hour, Unique: store.Unique{Key: "u", OnDuplicate: "debounce"}})
			if got := pinx(); len(got) != 0 {
				t.Fatalf("pinx %v after cancel, delete, reroute off its worker and debounce, want none", got)
			}
			// r, now unpinned, runs on any worker; u, due in an hour, is
			// listed at its deadline again when promoted
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["r"] {
				t.Fatalf("claimed %v, want r", got)
			}
			f.clk.Advance(time.Hour)
			f.claim(10, "w")
			if got := pinx(); len(got) != 1 || got[0] != "u" {
				t.Fatalf("pinx %v once u is promoted, want u", got)
			}
		})
	}
}

// TestMalformedPinnedJobLeavesPinx: a pinned job that its own worker's
// claim archives as malformed (corrupt data: here a kind written empty)
// takes its pinx entry with it, as a cancel's unlist does: left there, a
// Wait job's deadline a day ahead kept every claim of the partition
// reading the timed indexes for a job archived (review 47c).
func TestMalformedPinnedJobLeavesPinx(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Sticky: store.Sticky{Worker: "w", Mode: "w"}, Deadline: f.clk.Now().Add(24 * time.Hour)},
				store.NewJob{Local: "k", Sticky: store.Sticky{Worker: "w", Mode: "a", After: time.Hour}})
			for _, id := range []string{"j", "k"} {
				if err := f.rdb.HSet(f.ctx, f.p.Job(id), keys.FieldKind, "").Err(); err != nil {
					t.Fatal(err)
				}
			}
			res := f.claim(10, "w")
			if len(res.Jobs) != 0 || len(res.Parked) != 2 || res.Parked[0].Reason != "malformed" {
				t.Fatalf("claimed %v, parked %v; want j and k archived malformed", locals(res.Jobs), res.Parked)
			}
			if got := f.rdb.ZRange(f.ctx, f.p.PinDeadlines(), 0, -1).Val(); len(got) != 0 {
				t.Errorf("pinx holds %v after its jobs were archived malformed, want nothing", got)
			}
		})
	}
}
