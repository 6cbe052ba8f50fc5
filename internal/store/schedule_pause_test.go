package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSchedulePauseKeepsTicksDueBefore: a pause stops the ticks after it,
// not those due before it that no scheduler had enqueued yet. Before, a
// pause that landed between a scheduler's sync and its claim made the
// claim 'paused', and the resume restarted from its own time: the tick,
// due while the schedule ran, was never enqueued (found by an audit).
// Here the claim of a tick due before the pause is taken while paused;
// and when a pause and its resume both land before any scheduler looked,
// the ticks before the pause are still handed out (the sync's Until), the
// ones during it dropped by the sync after their claim.
func TestSchedulePauseKeepsTicksDueBefore(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			ctx, st := f.ctx, f.st
			minute := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Minute) }
			must(t, st.PublishSchedule(ctx, store.ScheduleDef{Name: "s", Every: time.Minute, Queue: "q", Kind: "k"}))
			sync := func(want store.ScheduleSync) {
				t.Helper()
				got, err := st.SyncSchedule(ctx, "s", time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("sync (-want +got):\n%s", diff)
				}
			}
			claim := func(seen, last time.Time, want string, ticks ...time.Time) {
				t.Helper()
				if got, err := st.ClaimTicks(ctx, "s", seen, last, ticks); err != nil || got != want {
					t.Fatalf("claim %v -> %v: %q, %v; want %q", seen, last, got, err, want)
				}
			}
			sync(store.ScheduleSync{Now: epoch, Last: epoch, Until: epoch})

			// Synced with tick 1 due, then paused before the claim.
			f.clk.Advance(time.Minute + time.Second)
			sync(store.ScheduleSync{Now: minute(1).Add(time.Second), Last: epoch, Until: minute(1).Add(time.Second)})
			must(t, st.PauseSchedule(ctx, "s"))
			paused := minute(1).Add(time.Second)
			claim(epoch, paused, store.Claimed, minute(1))
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(1)}, minute(1)))
			f.clk.Advance(time.Minute)
			claim(paused, minute(2), store.ClaimPaused, minute(2)) // after the pause
			sync(store.ScheduleSync{Now: minute(2).Add(time.Second), Last: paused, Paused: true, Until: paused})
			f.clk.Advance(time.Minute)
			must(t, st.ResumeSchedule(ctx, "s"))
			resumed := minute(3).Add(time.Second)
			sync(store.ScheduleSync{Now: resumed, Last: resumed, Until: resumed})

			// Tick 4 due, then paused and resumed before any sync: it is
			// still handed out, up to the pause; ticks 5 and 6 are not.
			f.clk.Advance(time.Minute)
			must(t, st.PauseSchedule(ctx, "s"))
			paused = minute(4).Add(time.Second)
			f.clk.Advance(2 * time.Minute)
			must(t, st.PauseSchedule(ctx, "s")) // paused already: its time stays
			must(t, st.ResumeSchedule(ctx, "s"))
			resumed = minute(6).Add(time.Second)
			sync(store.ScheduleSync{Now: resumed, Last: minute(3).Add(time.Second), Until: paused})
			claim(minute(3).Add(time.Second), paused, store.Claimed, minute(4))
			sync(store.ScheduleSync{Now: resumed, Last: resumed, Until: resumed})
			f.clk.Advance(time.Minute)
			claim(resumed, minute(7), store.Claimed, minute(7))

			// Ran is the latest tick whose job was added, as its ack says:
			// the claims of ticks 4 and 7 are no run yet.
			rec, err := st.Schedule(ctx, "s")
			if err != nil || !rec.Ran.Equal(minute(1)) || !rec.Last.Equal(minute(7)) {
				t.Fatalf("record: ran %v, last %v, %v; want ran %v, last %v", rec.Ran, rec.Last, err, minute(1), minute(7))
			}
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(4), minute(7)}, minute(4)))
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(7)}, time.Time{}))
			if rec, err = st.Schedule(ctx, "s"); err != nil || !rec.Ran.Equal(minute(4)) {
				t.Fatalf("record after acks: ran %v, %v; want %v", rec.Ran, err, minute(4))
			}
		})
	}
}
