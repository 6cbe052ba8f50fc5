package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/store"
)

// TestScheduleScript runs lua/schedule.lua through every operation on
// miniredis, a real Redis and a cluster: state starts at the first sync,
// only the claim that saw the current last tick wins (and the same claim
// sent again is answered as it was), pause and resume,
// and ticks claimed but never acknowledged are handed to another caller
// once, after the abandon delay.
func TestScheduleScript(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			ctx, st := f.ctx, f.st
			const abandon = 30 * time.Second
			minute := func(n int) time.Time { return epoch.Add(time.Duration(n) * time.Minute) }

			if _, err := st.SyncSchedule(ctx, "s", abandon); !errors.Is(err, store.ErrNoSchedule) {
				t.Fatalf("sync before publish: %v", err)
			}
			for _, op := range []func() error{
				func() error { return st.PauseSchedule(ctx, "s") },
				func() error { return st.ResumeSchedule(ctx, "s") },
				func() error { _, err := st.ClaimTicks(ctx, "s", epoch, epoch, nil); return err },
				func() error { _, err := st.Schedule(ctx, "s"); return err },
			} {
				if err := op(); !errors.Is(err, store.ErrNoSchedule) {
					t.Fatalf("op on a missing schedule: %v", err)
				}
			}
			def := store.ScheduleDef{
				Name: "s", Cron: "* * * * *", TimeZone: "Europe/Paris", Missed: "once", Grace: time.Minute,
				Queue: "q", Kind: "k", Template: []byte{0x81, 0xa1, 'x', 0x01},
			}
			must(t, st.PublishSchedule(ctx, def))

			// The first sync starts the state at store time now.
			sync := func(want store.ScheduleSync) {
				t.Helper()
				got, err := st.SyncSchedule(ctx, "s", abandon)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("sync (-want +got):\n%s", diff)
				}
			}
			sync(store.ScheduleSync{Now: epoch, Last: epoch})

			// Two schedulers saw last = epoch; the first claim wins.
			f.clk.Advance(time.Minute)
			claim := func(seen, last time.Time, want string, ticks ...time.Time) {
				t.Helper()
				got, err := st.ClaimTicks(ctx, "s", seen, last, ticks)
				if err != nil || got != want {
					t.Fatalf("claim %v -> %v: %q, %v; want %q", seen, last, got, err, want)
				}
			}
			claim(epoch, minute(1), store.Claimed, minute(1))
			// The same claim again (its reply lost, go-redis sends it
			// again) is answered as the first: it answered 'moved', and
			// the scheduler skipped ticks it had claimed until their
			// abandon delay. A twin claim of another scheduler is answered
			// so too; the ticks' jobs have IDs of their own, enqueued once.
			claim(epoch, minute(1), store.Claimed, minute(1))
			claim(epoch, minute(2), store.ClaimMoved, minute(1), minute(2))
			sync(store.ScheduleSync{Now: minute(1), Last: minute(1)})

			// The claimed tick is not acknowledged: after the abandon delay
			// one sync hands it over, the next does not.
			f.clk.Advance(abandon)
			sync(store.ScheduleSync{Now: minute(1).Add(abandon), Last: minute(1), Abandoned: []time.Time{minute(1)}})
			sync(store.ScheduleSync{Now: minute(1).Add(abandon), Last: minute(1)})
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(1)}))
			f.clk.Advance(abandon)
			sync(store.ScheduleSync{Now: minute(2), Last: minute(1)})

			// Paused: claims are refused; resuming restarts from now.
			must(t, st.PauseSchedule(ctx, "s"))
			must(t, st.PauseSchedule(ctx, "s"))
			sync(store.ScheduleSync{Now: minute(2), Last: minute(1), Paused: true})
			claim(minute(1), minute(2), store.ClaimPaused, minute(2))
			f.clk.Advance(3*time.Minute + time.Second)
			must(t, st.ResumeSchedule(ctx, "s"))
			resumed := minute(5).Add(time.Second)
			sync(store.ScheduleSync{Now: resumed, Last: resumed})
			must(t, st.ResumeSchedule(ctx, "s")) // not paused: no change
			sync(store.ScheduleSync{Now: resumed, Last: resumed})

			// The record: definition, last tick decided, last tick enqueued.
			claim(resumed, minute(6), store.Claimed)
			want := store.ScheduleRecord{ScheduleDef: def, Last: minute(6), Ran: minute(1)}
			got, err := st.Schedule(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("record (-want +got):\n%s", diff)
			}
			def2 := def
			def2.Name, def2.Cron, def2.Every = "a", "", time.Hour
			must(t, st.PublishSchedule(ctx, def2))
			list, err := st.Schedules(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantList := []store.ScheduleRecord{{ScheduleDef: def2}, want}
			if diff := cmp.Diff(wantList, list); diff != "" {
				t.Fatalf("list (-want +got):\n%s", diff)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
