package store_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// schedDump is schedule s's keys (record, pending ticks, names set) with
// their types and contents, as text; unlike nsDump it works on a cluster
// (one hash tag), and leaves out the call records (lib_replay.lua).
func schedDump(f *fixture) map[string]string {
	f.t.Helper()
	ks := keys.Schedules{NS: f.st.NS()}
	out := map[string]string{}
	for _, k := range []string{ks.Schedule("s"), ks.Pending("s"), ks.Names()} {
		var v any
		switch typ := f.rdb.Type(f.ctx, k).Val(); typ {
		case "none":
			continue
		case "hash":
			v = f.rdb.HGetAll(f.ctx, k).Val()
		case "set":
			v = f.rdb.SMembers(f.ctx, k).Val()
		case "string":
			v = f.rdb.Get(f.ctx, k).Val()
		default:
			v = typ
		}
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestDeleteScheduleRefusesWhatItCannotDoAndWritesNothing: DeleteSchedule
// of an unknown name is ErrNoSchedule; of a schedule whose record or
// pending ticks hold another type than a hash (written by hand),
// ErrMalformed naming it; of a schedule a scheduler synced less than
// ScheduleRunningWithin ago, or that none ever synced (a scheduler of an
// older release records no sync), ErrScheduleRunning. None of them writes
// anything.
func TestDeleteScheduleRefusesWhatItCannotDoAndWritesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		refused := func(t *testing.T, f *fixture, force bool, want error) {
			t.Helper()
			before := schedDump(f)
			err := f.st.DeleteSchedule(f.ctx, "s", force)
			if !errors.Is(err, want) {
				t.Errorf("delete: %v; want %v", err, want)
			}
			if after := schedDump(f); !maps.Equal(before, after) {
				t.Errorf("a refused delete wrote:\nbefore %v\nafter  %v", before, after)
			}
		}
		t.Run(b.name+"/unknown", func(t *testing.T) {
			f := newFixture(t, b)
			refused(t, f, true, store.ErrNoSchedule)
		})
		t.Run(b.name+"/record of another type", func(t *testing.T) {
			f := newFixture(t, b)
			ks, _ := claimedTick(t, f)
			f.overwrite(ks.Schedule("s"))
			refused(t, f, true, store.ErrMalformed)
		})
		t.Run(b.name+"/pending ticks of another type", func(t *testing.T) {
			f := newFixture(t, b)
			ks, _ := claimedTick(t, f)
			f.clk.Advance(store.ScheduleRunningWithin)
			f.overwrite(ks.Pending("s"))
			refused(t, f, true, store.ErrMalformed)
		})
		t.Run(b.name+"/synced just before", func(t *testing.T) {
			f := newFixture(t, b)
			claimedTick(t, f)
			f.clk.Advance(store.ScheduleRunningWithin - time.Minute - time.Millisecond) // synced at epoch
			refused(t, f, false, store.ErrScheduleRunning)
		})
		t.Run(b.name+"/never synced", func(t *testing.T) {
			f := newFixture(t, b)
			must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Every: time.Minute, Queue: "q", Kind: "k"}))
			f.clk.Advance(24 * time.Hour)
			refused(t, f, false, store.ErrScheduleRunning)
		})
	}
}

// TestDeleteScheduleRemovesRecordPendingTicksAndName: a schedule no
// scheduler synced for ScheduleRunningWithin, or one still synced and
// forced, is deleted with its pending ticks and its name: Schedule
// answers ErrNoSchedule and Schedules no longer lists it. A scheduler
// that runs it again starts it afresh from its sync.
func TestDeleteScheduleRemovesRecordPendingTicksAndName(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, force := range []bool{false, true} {
			name := b.name + "/stale"
			if force {
				name = b.name + "/forced while synced"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, b)
				ks, _ := claimedTick(t, f) // a tick pending
				if !force {
					f.clk.Advance(store.ScheduleRunningWithin)
				}
				must(t, f.st.DeleteSchedule(f.ctx, "s", force))
				if n := f.rdb.Exists(f.ctx, ks.Schedule("s"), ks.Pending("s")).Val(); n != 0 {
					t.Errorf("%d of the record and the pending ticks left", n)
				}
				if f.rdb.SIsMember(f.ctx, ks.Names(), "s").Val() {
					t.Error("the name is still in the names set")
				}
				if _, err := f.st.Schedule(f.ctx, "s"); !errors.Is(err, store.ErrNoSchedule) {
					t.Errorf("Schedule after the delete: %v; want ErrNoSchedule", err)
				}
				if recs, err := f.st.Schedules(f.ctx); err != nil || len(recs) != 0 {
					t.Errorf("Schedules after the delete: %v, %v; want none", recs, err)
				}
				if err := f.st.DeleteSchedule(f.ctx, "s", true); !errors.Is(err, store.ErrNoSchedule) {
					t.Errorf("a second delete (another call): %v; want ErrNoSchedule", err)
				}
				// run again: published and synced, it starts afresh from now
				must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Every: time.Minute, Queue: "q", Kind: "k"}))
				st, err := f.st.SyncSchedule(f.ctx, "s", abandon)
				if err != nil {
					t.Fatal(err)
				}
				if now := f.clk.Now(); !st.Last.Equal(now) || len(st.Abandoned) != 0 || st.Paused {
					t.Errorf("sync after the delete: %+v; want last at now (%v), nothing handed over", st, now)
				}
			})
		}
	}
}

// TestDeleteScheduleCorruptSeenSaysSo: a schedule whose field seen is no
// time (written by hand) is refused unforced with ErrScheduleRunning,
// nothing written, saying that field cannot tell, not that no scheduler
// of this release ever synced it (one did: seen is there); forced, it is
// deleted.
func TestDeleteScheduleCorruptSeenSaysSo(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ks, _ := claimedTick(t, f)
			f.clk.Advance(store.ScheduleRunningWithin)
			f.rdb.HSet(f.ctx, ks.Schedule("s"), "seen", "soon")
			before := schedDump(f)
			err := f.st.DeleteSchedule(f.ctx, "s", false)
			if !errors.Is(err, store.ErrScheduleRunning) || strings.Contains(err.Error(), "never synced") ||
				!strings.Contains(err.Error(), `"soon"`) {
				t.Errorf("delete of a schedule whose seen is corrupt: %v; want ErrScheduleRunning naming the field's value", err)
			}
			if after := schedDump(f); !maps.Equal(before, after) {
				t.Errorf("a refused delete wrote:\nbefore %v\nafter  %v", before, after)
			}
			must(t, f.st.DeleteSchedule(f.ctx, "s", true))
		})
	}
}
