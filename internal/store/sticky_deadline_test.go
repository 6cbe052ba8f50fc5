package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestWaitPinnedJobMeetsItsDeadline: a job pinned to a worker with no
// fallback (sticky.Wait) and a deadline is archived at its deadline by any
// worker's claim, its pin list entry taken with it, when its own worker
// never comes back: before, only that worker's claim looked at it, and it
// stayed available for ever (a parent joining it waited for ever). Its own
// worker, back before the deadline, still runs it, and leaves nothing
// due behind.
func TestWaitPinnedJobMeetsItsDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			wait := func(w string) store.Sticky { return store.Sticky{Worker: w, Mode: "w"} }
			f.enqueue(store.NewJob{Local: "j", Sticky: wait("gone"), Deadline: f.clk.Now().Add(time.Minute)},
				store.NewJob{Local: "k", Sticky: wait("back"), Deadline: f.clk.Now().Add(time.Minute)},
				store.NewJob{Local: "forever", Sticky: wait("gone")})
			res := f.claim(10, "w")
			if len(res.Jobs) != 0 || len(res.Parked) != 0 {
				t.Fatalf("before the deadline w claimed %v, parked %v", locals(res.Jobs), res.Parked)
			}
			if res.NextDue <= 0 || res.NextDue > time.Minute {
				t.Fatalf("next due in %v, want the deadline in a minute (a worker must come then)", res.NextDue)
			}
			k := f.claimOne("back")
			if k.Local != "k" {
				t.Fatalf("worker back claimed %s, want k", k.Local)
			}
			f.clk.Advance(time.Minute)
			res = f.claim(10, "w")
			if len(res.Jobs) != 0 || len(res.Parked) != 1 || res.Parked[0].Local != "j" || res.Parked[0].Reason != "deadline_exceeded" {
				t.Fatalf("at the deadline w claimed %v, parked %v; want j archived deadline_exceeded", locals(res.Jobs), res.Parked)
			}
			if got, _ := f.get("j"); got.State != "archived" || got.Reason != "deadline_exceeded" {
				t.Fatalf("j is %s (%s)", got.State, got.Reason)
			}
			pin, err := f.rdb.LRange(f.ctx, f.p.Pinned("gone"), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(pin, "j") || !slices.Contains(pin, "forever") {
				t.Fatalf("pin list of gone is %v, want forever alone", pin)
			}
			if n, err := f.rdb.ZCard(f.ctx, f.p.PinDeadlines()).Result(); err != nil || n != 0 {
				t.Fatalf("%d fallback deadlines left (%v), want none", n, err)
			}
			f.ack(k, store.Ack{Code: store.CodeOK})
		})
	}
}

// TestWaitPinnedHeldJobHeldNoMoreAtDeadline: a job pinned with
// sticky.Wait and held behind a quarantined twin is due at its deadline
// (held_due); promoted then onto its worker's pin list, its pinx entry is
// due at once and promote_pinned archives it deadline_exceeded. It must
// be held no more, as when a claim archives it (unhold): it showed held
// by its twin though archived, and stayed on the twin's held list.
func TestWaitPinnedHeldJobHeldNoMoreAtDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "q", Hold: "fp"})
			f.crashOut("q")
			f.enqueue(store.NewJob{Local: "h", Hold: "fp", Sticky: store.Sticky{Worker: "gone", Mode: "w"},
				Deadline: f.clk.Now().Add(time.Minute)})
			if j, _ := f.get("h"); j.HeldBy != "q" {
				t.Fatalf("h held by %q, want q", j.HeldBy)
			}
			f.clk.Advance(2 * time.Minute)
			res := f.claim(10, "w")
			if len(res.Parked) != 1 || res.Parked[0].Local != "h" || res.Parked[0].Reason != "deadline_exceeded" {
				t.Fatalf("parked %v, want h deadline_exceeded", res.Parked)
			}
			if j, _ := f.get("h"); j.State != "archived" || j.HeldBy != "" {
				t.Fatalf("h is %s held by %q, want archived, held by none", j.State, j.HeldBy)
			}
			if l, _ := f.rdb.LRange(f.ctx, f.p.HeldOn("fp"), 0, -1).Result(); len(l) != 0 {
				t.Fatalf("held list %v, want empty", l)
			}
		})
	}
}

// TestPinnedFallbackPastDeadline: a job pinned to a worker with a fallback
// (sticky.After, sticky.FailAfter) due after its deadline is archived at
// its deadline (deadline_exceeded) by any worker's claim when its worker
// does not come, as a sticky.Wait job is: before, its fallback's entry in
// pinx was the only one, and it stayed available past its deadline until
// the fallback fell due (an hour here), a parent joining it not told.
// Its worker passing it over as a suspect does not put it past its
// deadline either.
func TestPinnedFallbackPastDeadline(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			dl := f.clk.Now().Add(time.Minute)
			f.enqueue(store.NewJob{Local: "a", Sticky: store.Sticky{Worker: "gone", Mode: "a", After: time.Hour}, Deadline: dl},
				store.NewJob{Local: "f", Sticky: store.Sticky{Worker: "gone", Mode: "f", After: time.Hour}, Deadline: dl},
				store.NewJob{Local: "soon", Sticky: store.Sticky{Worker: "gone", Mode: "a", After: time.Second}, Deadline: dl})
			for _, id := range []string{"a", "f"} {
				if at, ok := f.score(f.p.PinDeadlines(), id); !ok || int64(at) != dl.UnixMilli() {
					t.Fatalf("%s in pinx at %v (%v), want its deadline %d", id, at, ok, dl.UnixMilli())
				}
			}
			f.clk.Advance(time.Second)
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["soon"] {
				t.Fatalf("at 1 s claimed %v, want soon (its fallback before its deadline)", got)
			}
			f.clk.Advance(time.Minute)
			f.claimArchivesLate(2, "a and f")
			pin, err := f.rdb.LRange(f.ctx, f.p.Pinned("gone"), 0, -1).Result()
			if err != nil || len(pin) != 0 {
				t.Fatalf("pin list of gone is %v (%v), want empty", pin, err)
			}
		})
	}
}
