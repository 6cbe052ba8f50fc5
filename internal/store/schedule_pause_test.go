package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
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
			publishMinutely(t, f)
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
			// the resume moved last to its time, as every release's resume
			// does: a scheduler of a release that knows no owed ticks runs
			// none of the pause
			if v, _ := f.rdb.HGet(ctx, keys.Schedules{NS: f.p.NS}.Schedule("s"), "last").Int64(); v != resumed.UnixMilli() {
				t.Errorf("last after the resume: %d, want the resume's time %d", v, resumed.UnixMilli())
			}
			// later: the window from the resume, empty yet
			sync(store.ScheduleSync{Now: resumed, Last: minute(3).Add(time.Second), Until: paused,
				Later: [][2]time.Time{{resumed, resumed}}})
			claim(minute(3).Add(time.Second), paused, store.Claimed, minute(4))
			claim(minute(3).Add(time.Second), paused, store.ClaimMoved, minute(4)) // another scheduler's twin
			sync(store.ScheduleSync{Now: resumed, Last: resumed, Until: resumed})
			f.clk.Advance(time.Minute)
			claim(resumed, minute(7), store.Claimed, minute(7))

			// Two pauses and resumes before any sync: the ticks due before
			// each pause are owed, oldest first.
			f.clk.Advance(time.Minute) // 8:01, tick 8 due
			must(t, st.PauseSchedule(ctx, "s"))
			f.clk.Advance(2 * time.Minute)
			must(t, st.ResumeSchedule(ctx, "s"))
			f.clk.Advance(time.Minute) // 11:01, tick 11 due
			must(t, st.PauseSchedule(ctx, "s"))
			f.clk.Advance(time.Minute)
			must(t, st.ResumeSchedule(ctx, "s"))
			// each sync names the windows after its own, for a missed-run
			// policy to count their ticks too
			sync(store.ScheduleSync{Now: minute(12).Add(time.Second), Last: minute(7), Until: minute(8).Add(time.Second),
				Later: [][2]time.Time{{minute(10).Add(time.Second), minute(11).Add(time.Second)}, {minute(12).Add(time.Second), minute(12).Add(time.Second)}}})
			claim(minute(7), minute(8).Add(time.Second), store.Claimed, minute(8))
			sync(store.ScheduleSync{Now: minute(12).Add(time.Second), Last: minute(10).Add(time.Second), Until: minute(11).Add(time.Second),
				Later: [][2]time.Time{{minute(12).Add(time.Second), minute(12).Add(time.Second)}}})
			claim(minute(10).Add(time.Second), minute(11).Add(time.Second), store.Claimed, minute(11))
			sync(store.ScheduleSync{Now: minute(12).Add(time.Second), Last: minute(12).Add(time.Second), Until: minute(12).Add(time.Second)})

			// A pause's time ahead of store time (written by hand, or a
			// clock gone back after a failover) opens no window past now.
			must(t, st.PauseSchedule(ctx, "s"))
			must(t, f.rdb.HSet(ctx, keys.Schedules{NS: f.p.NS}.Schedule("s"), "paused_at", minute(60).UnixMilli()).Err())
			sync(store.ScheduleSync{Now: minute(12).Add(time.Second), Last: minute(12).Add(time.Second), Paused: true, Until: minute(12).Add(time.Second)})
			must(t, st.ResumeSchedule(ctx, "s"))

			// Owed windows written by hand as no windows are dropped.
			must(t, f.rdb.HSet(ctx, keys.Schedules{NS: f.p.NS}.Schedule("s"), "owed", "9:x").Err())
			sync(store.ScheduleSync{Now: minute(12).Add(time.Second), Last: minute(12).Add(time.Second), Until: minute(12).Add(time.Second)})
			if n, _ := f.rdb.HExists(ctx, keys.Schedules{NS: f.p.NS}.Schedule("s"), "owed").Result(); n {
				t.Errorf("a malformed owed field was kept")
			}

			// Ran is the latest tick whose job was added, as its ack says:
			// the claims of ticks 4 and 7 are no run yet.
			rec, err := st.Schedule(ctx, "s")
			if err != nil || !rec.Ran.Equal(minute(1)) {
				t.Fatalf("record: ran %v, %v; want %v", rec.Ran, err, minute(1))
			}
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(4), minute(7)}, minute(4)))
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(7)}, time.Time{}))
			if rec, err = st.Schedule(ctx, "s"); err != nil || !rec.Ran.Equal(minute(4)) {
				t.Fatalf("record after acks: ran %v, %v; want %v", rec.Ran, err, minute(4))
			}
		})
	}
}

// TestScheduleLateClaimKeepsTheRestOwed: a scheduler syncs while the
// schedule runs and plans tick 1; before its claim lands, tick 2 falls,
// and the schedule is paused and resumed, which records the ticks before
// the pause as owed, from the last tick the scheduler saw. Its late claim
// matches the owed window's start, and decides that window up to tick 1
// only: tick 2 stays owed. Before, the claim deleted the whole window, and
// tick 2, due before the pause, was lost (found by the day's review).
func TestScheduleLateClaimKeepsTheRestOwed(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			ctx, st := f.ctx, f.st
			publishMinutely(t, f)
			if _, err := st.SyncSchedule(ctx, "s", time.Hour); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(90 * time.Second)
			a, err := st.SyncSchedule(ctx, "s", time.Hour) // (0, 1:30]: tick 1
			if err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Minute) // tick 2 falls
			must(t, st.PauseSchedule(ctx, "s"))
			f.clk.Advance(2 * time.Minute)
			must(t, st.ResumeSchedule(ctx, "s")) // owed: (0, 2:30]
			if got, err := st.ClaimTicks(ctx, "s", a.Last, minute(1), []time.Time{minute(1)}); err != nil || got != store.Claimed {
				t.Fatalf("the late claim: %q, %v", got, err)
			}
			s, err := st.SyncSchedule(ctx, "s", time.Hour)
			if err != nil || !s.Last.Equal(minute(1)) || !s.Until.Equal(minute(2).Add(30*time.Second)) {
				t.Fatalf("sync after the late claim: (%v, %v], %v; want tick 2's window (1:00, 2:30] still owed", s.Last.Sub(epoch), s.Until.Sub(epoch), err)
			}
		})
	}
}

// publishMinutely publishes schedule "s", a tick every minute (its ticks
// are minute(n), from the fixture's epoch), on f's store.
func publishMinutely(t *testing.T, f *fixture) {
	t.Helper()
	must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Every: time.Minute, Queue: "q", Kind: "k"}))
}

// minute is tick n of a schedule of every minute from the epoch.
func minute(n int) time.Time { return epoch.Add(time.Duration(n) * time.Minute) }
