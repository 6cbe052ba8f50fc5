package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestScheduleScript runs lua/schedule.lua through every operation on
// miniredis, a real Redis and a cluster: state starts at the first sync,
// only the claim that saw the current last tick wins, pause and resume,
// and ticks claimed but never acknowledged are handed to another caller
// once, after the abandon delay.
func TestScheduleScript(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			ctx, st := f.ctx, f.st

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
			sync(store.ScheduleSync{Now: epoch, Last: epoch, Until: epoch})

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
			claim(epoch, minute(1), store.ClaimMoved, minute(1))
			sync(store.ScheduleSync{Now: minute(1), Last: minute(1), Until: minute(1)})

			// The claimed tick is not acknowledged: after the abandon delay
			// one sync hands it over, the next does not.
			f.clk.Advance(abandon)
			sync(store.ScheduleSync{Now: minute(1).Add(abandon), Last: minute(1), Until: minute(1).Add(abandon), Abandoned: []time.Time{minute(1)}})
			sync(store.ScheduleSync{Now: minute(1).Add(abandon), Last: minute(1), Until: minute(1).Add(abandon)})
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(1)}, minute(1)))
			f.clk.Advance(abandon)
			sync(store.ScheduleSync{Now: minute(2), Last: minute(1), Until: minute(2)})

			// Paused: a claim of the ticks due by the pause is taken, one
			// past it refused (a second pause does not move the pause's
			// time); resuming restarts from now.
			must(t, st.PauseSchedule(ctx, "s"))
			sync(store.ScheduleSync{Now: minute(2), Last: minute(1), Paused: true, Until: minute(2)})
			f.clk.Advance(time.Minute)
			must(t, st.PauseSchedule(ctx, "s"))
			sync(store.ScheduleSync{Now: minute(3), Last: minute(1), Paused: true, Until: minute(2)})
			claim(minute(1), minute(3), store.ClaimPaused, minute(3))
			claim(minute(1), minute(2), store.Claimed, minute(2))
			must(t, st.AckTicks(ctx, "s", []time.Time{minute(2)}, minute(2)))
			sync(store.ScheduleSync{Now: minute(3), Last: minute(2), Paused: true, Until: minute(2)})
			f.clk.Advance(2*time.Minute + time.Second)
			must(t, st.ResumeSchedule(ctx, "s"))
			resumed := minute(5).Add(time.Second)
			sync(store.ScheduleSync{Now: resumed, Last: resumed, Until: resumed})
			must(t, st.ResumeSchedule(ctx, "s")) // not paused: no change
			sync(store.ScheduleSync{Now: resumed, Last: resumed, Until: resumed})

			// The record: definition, last tick decided, last tick enqueued
			// (by its ack: a claim is not a run).
			claim(resumed, minute(6), store.Claimed, minute(6))
			want := store.ScheduleRecord{ScheduleDef: def, Last: minute(6), Ran: minute(2)}
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

// resendClaims is a go-redis hook that runs each schedule claim twice and
// answers the second run, as go-redis does when the first reply is lost.
type resendClaims struct{}

func (resendClaims) DialHook(next redis.DialHook) redis.DialHook { return next }

func (resendClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || !slices.Contains(cmd.Args(), any("claim")) {
			return err
		}
		return next(ctx, cmd)
	}
}

func (resendClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestScheduleClaimSentAgain: a claim of ticks whose reply was lost, sent
// again, is answered as its first run was (Claimed), while a twin claim
// of another scheduler, which saw the same last tick, is refused (Moved):
// its ticks' jobs would run again once the first ones were done and
// deleted. Before, the re-send answered Moved, and its ticks waited for
// the abandon delay.
func TestScheduleClaimSentAgain(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			b.rdb.AddHook(resendClaims{})
			f := newFixture(t, b)
			must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Cron: "* * * * *", TimeZone: "UTC", Missed: "once",
				Queue: "q", Kind: "k", Template: []byte{0x80}}))
			if _, err := f.st.SyncSchedule(f.ctx, "s", time.Minute); err != nil {
				t.Fatal(err)
			}
			tick := epoch.Add(time.Minute)
			f.clk.Advance(time.Minute)
			for i, want := range []string{store.Claimed, store.ClaimMoved} { // the claim, then its twin
				if got, err := f.st.ClaimTicks(f.ctx, "s", epoch, tick, []time.Time{tick}); err != nil || got != want {
					t.Fatalf("claim %d: %q %v, want %q", i, got, err, want)
				}
			}
		})
	}
}

// resendClaimAfter is a go-redis hook that runs the first schedule claim,
// then between (another scheduler's calls), then the claim again, and
// answers the second run: go-redis re-sends a command whose reply was
// lost, and others' calls may reach Redis in between.
type resendClaimAfter struct {
	between func()
	once    sync.Once
}

func (h *resendClaimAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *resendClaimAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || !slices.Contains(cmd.Args(), any("claim")) {
			return err
		}
		first := false
		h.once.Do(func() { first = true })
		if !first {
			return nil
		}
		h.between()
		return next(ctx, cmd)
	}
}

func (h *resendClaimAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestScheduleClaimSentAgainAfterMoved: a claim of a tick whose reply was
// lost is sent again after another scheduler has claimed the next tick.
// The re-send is answered as its first run was (Claimed), so its caller
// enqueues the tick it claimed. Before, it answered Moved (the schedule's
// last tick and claim token were the other scheduler's by then): the
// caller looked again and found nothing to do, and the tick, pending,
// ran only once a sync found it abandoned, 30 s late.
func TestScheduleClaimSentAgainAfterMoved(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Cron: "* * * * *", TimeZone: "UTC", Missed: "once",
				Queue: "q", Kind: "k", Template: []byte{0x80}}))
			if _, err := f.st.SyncSchedule(f.ctx, "s", time.Minute); err != nil {
				t.Fatal(err)
			}
			tick, next := epoch.Add(time.Minute), epoch.Add(2*time.Minute)
			f.clk.Advance(time.Minute)
			other := store.New(b.rdb, store.Config{NS: f.st.NS(), Now: f.clk.Now})
			hook := &resendClaimAfter{between: func() {
				f.clk.Advance(time.Minute)
				if got, err := other.ClaimTicks(f.ctx, "s", tick, next, []time.Time{next}); err != nil || got != store.Claimed {
					t.Errorf("the other scheduler's claim of the next tick: %q %v", got, err)
				}
			}}
			b.rdb.AddHook(hook)
			if got, err := f.st.ClaimTicks(f.ctx, "s", epoch, tick, []time.Time{tick}); err != nil || got != store.Claimed {
				t.Fatalf("claim sent again: %q %v, want %q", got, err, store.Claimed)
			}
			if got, err := f.st.ClaimTicks(f.ctx, "s", epoch, tick, []time.Time{tick}); err != nil || got != store.ClaimMoved {
				t.Fatalf("a twin claim: %q %v, want %q", got, err, store.ClaimMoved)
			}
		})
	}
}

// resendSyncs is a go-redis hook that runs each schedule sync twice and
// answers the second run, as go-redis does when the first reply is lost.
type resendSyncs struct{}

func (resendSyncs) DialHook(next redis.DialHook) redis.DialHook { return next }

func (resendSyncs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || !slices.Contains(cmd.Args(), any("sync")) {
			return err
		}
		return next(ctx, cmd)
	}
}

func (resendSyncs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestScheduleSyncSentAgain: a sync that handed abandoned ticks over and
// whose reply was lost, sent again, hands the same ticks over; another
// caller's sync does not. Before, the re-send found the ticks' claim time
// reset by its first run and handed nothing: they waited for another
// abandon delay.
func TestScheduleSyncSentAgain(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			_, tick := claimedTick(t, f)
			f.clk.Advance(abandon)
			b.rdb.AddHook(resendSyncs{})
			st, err := f.st.SyncSchedule(f.ctx, "s", abandon)
			if err != nil || !cmp.Equal(st.Abandoned, []time.Time{tick}) {
				t.Fatalf("sync sent again: abandoned %v, %v; want [%v]", st.Abandoned, err, tick)
			}
			if st, err := f.st.SyncSchedule(f.ctx, "s", abandon); err != nil || len(st.Abandoned) != 0 {
				t.Fatalf("another sync: abandoned %v, %v; want none", st.Abandoned, err)
			}
		})
	}
}

// abandon is how long the tests' schedulers wait for a claimed tick's
// confirmation before taking it over.
const abandon = 30 * time.Second

// claimedTick publishes schedule "s" (every minute), syncs it at epoch
// and claims its first tick a minute later, unconfirmed; it returns the
// schedule's keys and that tick.
func claimedTick(t *testing.T, f *fixture) (keys.Schedules, time.Time) {
	t.Helper()
	must(t, f.st.PublishSchedule(f.ctx, store.ScheduleDef{Name: "s", Cron: "* * * * *", TimeZone: "UTC", Missed: "once",
		Queue: "q", Kind: "k", Template: []byte{0x80}}))
	if _, err := f.st.SyncSchedule(f.ctx, "s", abandon); err != nil {
		t.Fatal(err)
	}
	tick := epoch.Add(time.Minute)
	f.clk.Advance(time.Minute)
	if got, err := f.st.ClaimTicks(f.ctx, "s", epoch, tick, []time.Time{tick}); err != nil || got != store.Claimed {
		t.Fatalf("claim: %q %v", got, err)
	}
	return keys.Schedules{NS: f.st.NS()}, tick
}

// TestScheduleCorruptState: a pending tick or a 'ran' field that is not a
// number (written by hand) fails nothing and writes nothing half: the
// good abandoned ticks are still handed over, a corrupt claim time counts
// as abandoned, a tick that is not one is dropped, and claims go on.
// Before, sync stopped with a script error at the corrupt entry after
// resetting the claim times before it (so those were never handed over),
// and every claim failed after recording its ticks.
func TestScheduleCorruptState(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ks, tick := claimedTick(t, f)
			bad := epoch.Add(-time.Minute)
			must(t, f.rdb.HSet(f.ctx, ks.Pending("s"), "garbage", "1", bad.UnixMilli(), "garbage").Err())
			must(t, f.rdb.HSet(f.ctx, ks.Schedule("s"), "ran", "garbage").Err())
			f.clk.Advance(abandon)
			st, err := f.st.SyncSchedule(f.ctx, "s", abandon)
			if err != nil || !cmp.Equal(st.Abandoned, []time.Time{bad, tick}) {
				t.Fatalf("sync: abandoned %v, %v; want [%v %v]", st.Abandoned, err, bad, tick)
			}
			if n := f.rdb.HExists(f.ctx, ks.Pending("s"), "garbage").Val(); n {
				t.Fatal("a pending entry that names no tick is kept")
			}
			next := tick.Add(time.Minute)
			f.clk.Advance(time.Minute)
			if got, err := f.st.ClaimTicks(f.ctx, "s", tick, next, []time.Time{next}); err != nil || got != store.Claimed {
				t.Fatalf("claim over a corrupt ran: %q %v", got, err)
			}
		})
	}
}

// TestScheduleCorruptLast: a schedule whose last tick, or a pending
// tick's claim time, is not a number (written by hand: "garbage", or
// "nan" and "inf", which Lua's tonumber takes) is synced as one starting
// from now: the abandoned tick is handed over and the next claim goes on
// from the last time sync answered. Before, sync handed the tick over,
// then answered a reply cut short at the nil (ErrMalformed), on every
// sync, and the schedule never ran again (found by an audit).
func TestScheduleCorruptLast(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"garbage", "nan", "inf"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				ks, tick := claimedTick(t, f)
				other := tick.Add(-30 * time.Second) // a pending tick whose claim time is v
				must(t, f.rdb.HSet(f.ctx, ks.Pending("s"), other.UnixMilli(), v).Err())
				must(t, f.rdb.HSet(f.ctx, ks.Schedule("s"), "last", v).Err())
				f.clk.Advance(abandon)
				st, err := f.st.SyncSchedule(f.ctx, "s", abandon)
				if err != nil || !st.Last.Equal(f.clk.Now()) || !cmp.Equal(st.Abandoned, []time.Time{other, tick}) {
					t.Fatalf("sync over last %q: %+v %v; want last now (%v), ticks %v and %v abandoned", v, st, err, f.clk.Now(), other, tick)
				}
				next := st.Last.Add(time.Minute)
				f.clk.Advance(time.Minute)
				if got, err := f.st.ClaimTicks(f.ctx, "s", st.Last, next, []time.Time{next}); err != nil || got != store.Claimed {
					t.Fatalf("claim after the sync: %q %v", got, err)
				}
			})
		}
	}
}

// TestScheduleAckRepairsARanOfNoWholeNumber: a record whose 'ran' field
// holds what Lua's tonumber takes but is no whole number of ms (written
// by hand: 'nan', 'inf', '1e300') gets its latest run from the next ack,
// as one of 'garbage' does. Before, the ack compared the tick with it and
// never wrote (no tick is greater than 'inf' or 'nan'), and the record
// stayed malformed for Schedule and Schedules for ever, while its
// schedule ran.
func TestScheduleAckRepairsARanOfNoWholeNumber(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"nan", "inf", "1e300"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				ks, tick := claimedTick(t, f)
				must(t, f.rdb.HSet(f.ctx, ks.Schedule("s"), "ran", v).Err())
				must(t, f.st.AckTicks(f.ctx, "s", []time.Time{tick}, tick))
				r, err := f.st.Schedule(f.ctx, "s")
				if err != nil || !r.Ran.Equal(tick) {
					t.Fatalf("after the ack over ran %q: ran %v, %v; want %v", v, r.Ran, err, tick)
				}
			})
		}
	}
}
