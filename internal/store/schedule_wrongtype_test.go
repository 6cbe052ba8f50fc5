package store_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestScheduleCallsOnKeysOfAnotherTypeWriteNothing: a schedule whose
// pending ticks key, or whose record, holds another type than a hash
// (written by hand) has every call that needs it refused with
// ErrMalformed naming the schedule, and the refused call writes nothing:
// Redis keeps what a script wrote before it raised. Before, a sync over
// pending ticks of another type first started the record's last tick
// anew (it was absent, or not a whole number), dropped a paused_at left
// by an older release's resume and an owed field written by hand, then
// raised at the pending ticks; an ack over a record of another type
// deleted the ticks it confirmed from the pending ones, then raised.
func TestScheduleCallsOnKeysOfAnotherTypeWriteNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/sync over pending ticks of another type", func(t *testing.T) {
			f := newFixture(t, b)
			ks, _ := claimedTick(t, f)
			// the fields sync repairs before it reads the pending ticks
			must(t, f.rdb.HSet(f.ctx, ks.Schedule("s"), "last", "garbage", "paused", "0",
				"paused_at", epoch.UnixMilli(), "owed", "x:y").Err())
			f.overwrite(ks.Pending("s"))
			before := f.rdb.HGetAll(f.ctx, ks.Schedule("s")).Val()
			f.clk.Advance(abandon)
			_, err := f.st.SyncSchedule(f.ctx, "s", abandon)
			if !errors.Is(err, store.ErrMalformed) {
				t.Errorf("sync: %v; want ErrMalformed", err)
			}
			if after := f.rdb.HGetAll(f.ctx, ks.Schedule("s")).Val(); !maps.Equal(before, after) {
				t.Errorf("a refused sync wrote the record: before %v, after %v", before, after)
			}
		})
		t.Run(b.name+"/ack over a record of another type", func(t *testing.T) {
			f := newFixture(t, b)
			ks, tick := claimedTick(t, f)
			f.overwrite(ks.Schedule("s"))
			before := f.rdb.HGetAll(f.ctx, ks.Pending("s")).Val()
			err := f.st.AckTicks(f.ctx, "s", []time.Time{tick}, tick)
			if !errors.Is(err, store.ErrMalformed) {
				t.Errorf("ack: %v; want ErrMalformed", err)
			}
			if after := f.rdb.HGetAll(f.ctx, ks.Pending("s")).Val(); !maps.Equal(before, after) {
				t.Errorf("a refused ack wrote the pending ticks: before %v, after %v", before, after)
			}
		})
	}
}
