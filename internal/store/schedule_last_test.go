package store_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestScheduleLastNotWhole: a schedule whose last tick is a finite number
// that is no whole number of ms (written by hand: "<ms>.5", or "1e300")
// is synced as one starting from now, and its claims go on. Before, sync
// answered it as an integer (Redis truncates or saturates a Lua number)
// that the claim then compared with the number it read: every claim
// answered 'moved', and the schedule never enqueued again, silently (the
// scheduler takes three 'moved' for a race lost; found by an audit).
func TestScheduleLastNotWhole(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{".5", "1e300"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				ks, tick := claimedTick(t, f)
				last := v
				if v == ".5" {
					last = strconv.FormatInt(tick.UnixMilli(), 10) + v
				}
				must(t, f.rdb.HSet(f.ctx, ks.Schedule("s"), "last", last).Err())
				for range 3 {
					f.clk.Advance(time.Minute)
					st, err := f.st.SyncSchedule(f.ctx, "s", time.Hour)
					if err != nil {
						t.Fatalf("sync over last %q: %v", last, err)
					}
					next := f.clk.Now().Truncate(time.Minute)
					got, err := f.st.ClaimTicks(f.ctx, "s", st.Last, next, []time.Time{next})
					if err != nil {
						t.Fatalf("claim: %v", err)
					}
					if got != store.Claimed {
						t.Fatalf("last %q: sync answered %v; a claim from it: %q, want %q", last, st.Last, got, store.Claimed)
					}
				}
			})
		}
	}
}
