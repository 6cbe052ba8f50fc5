package store_test

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// A time a job's hash holds as a number (its lease start, its due time,
// a timer's wake time) may be corrupt data that Lua's tonumber takes:
// 'nan', 'inf', '1e400' (inf), '-1e400'. Each is that job's alone.

// TestCorruptLeaseStartIsUnknownRunTime: an ack's completion tallies the
// attempt's run time (store time less its lease start) by a table of
// bucket fields; a lease start of 'nan' made the index NaN, which raised
// after the batch's earlier outcomes had written; '-1e400' tallied a
// bucket 'rt:inf'. A lease start that is no whole number of ms is an
// unknown run time now: the job completes, untallied, and so do the
// others. The start is read from F.lease_start for a lease ID of an
// older release's shape (this release's names it, store.LeaseHolder), so
// "bad" is leased as such a release leased it.
func TestCorruptLeaseStartIsUnknownRunTime(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"nan", "inf", "1e400", "-1e400", "-1", "x"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "bad"}, store.NewJob{Local: "c"})
				held := f.claimLeases(3, "w")
				bad := held["bad"]
				bad.LeaseID = "older-shape.2"
				held["bad"] = bad
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldLeaseID, bad.LeaseID, keys.FieldLeaseStart, v)
				res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
					{Lease: held["a"], Code: store.CodeOK},
					{Lease: held["bad"], Code: store.CodeOK},
					{Lease: held["c"], Code: store.CodeOK},
				})
				if err != nil {
					t.Fatalf("ack: %v (a is %q)", err, f.rawState("a"))
				}
				for i, r := range res {
					if r.State != "completed" {
						t.Errorf("outcome %d: %+v, want completed", i, r)
					}
				}
				bucket := regexp.MustCompile(`^rt:\d+$`)
				mk := f.p.Minute(f.clk.Now().UnixMilli() / 60000)
				for field, n := range f.rdb.HGetAll(f.ctx, mk).Val() {
					if len(field) > 3 && field[:3] == "rt:" && !bucket.MatchString(field) {
						t.Errorf("tallied run time bucket %q (%s)", field, n)
					}
				}
			})
		}
	}
}

// unreadableTimes are due times no script can place: Lua's tonumber reads
// 'nan', 'inf' and '1e400' (inf) as numbers that are not finite, 'x' and
// the empty string as none.
var unreadableTimes = []string{"nan", "inf", "1e400", "-1e400", "x", ""}

// TestUnreadableRunAtIsDueAtItsEntry: a scheduled or retryable job's
// F.run_at says which index entry is its own (a job put off to a bucket
// of later jobs leaves a stale entry in sched, a bucket one it has left).
// promote took a run_at of 'inf' or '1e400' as "moved to a bucket" and
// dropped the job's only entry; sched_near dropped a bucket entry whose
// job's run_at was no number, or not finite: either way the job stayed
// scheduled on no index, lost. Now a run_at that is no finite number names
// no place: the entry the job is found at is its own, and the job runs
// when that entry comes due (a bucket's start for a bucket entry),
// listed and found by a scan by selector meanwhile.
func TestUnreadableRunAtIsDueAtItsEntry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range unreadableTimes {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "soon", Delay: 2 * time.Second},
					store.NewJob{Local: "later", Delay: time.Minute},
					store.NewJob{Local: "ok", Delay: time.Minute})
				for _, id := range []string{"soon", "later"} {
					f.rdb.HSet(f.ctx, f.p.Job(id), keys.FieldRunAt, v)
				}
				idx, err := store.SchedIndex(f.ctx, f.rdb, f.p)
				if err != nil {
					t.Fatal(err)
				}
				if len(idx) != 3 {
					t.Errorf("scheduled index %v, want every job", idx)
				}
				got := f.listAll("scheduled", 10)
				slices.Sort(got)
				if !slices.Equal(got, []string{"later", "ok", "soon"}) {
					t.Errorf("listed %v, want every job", got)
				}
				if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 10, true); n != 3 {
					t.Errorf("a dry scan matched %d, want 3", n)
				}
				f.clk.Advance(3 * time.Second)
				if got := f.claimed("n1"); !slices.Equal(got, []string{"soon"}) {
					t.Errorf("claimed %v once due, want soon (it is %q)", got, f.rawState("soon"))
				}
				f.clk.Advance(time.Minute)
				got = f.claimed("n2")
				slices.Sort(got)
				if !slices.Equal(got, []string{"later", "ok"}) {
					t.Errorf("claimed %v once due, want later and ok (later is %q)", got, f.rawState("later"))
				}
			})
		}
	}
}

// TestUnreadableTimerIsSetAnew: suspend keeps each timer's first wake
// time (F '!t:' .. name). One of 'nan' reached the index: the ZADD refused
// it after the ack batch's earlier outcomes had written; one of 'inf' was
// never due. A timer that holds no finite number is read as not set now,
// as one that is no number was: set anew from this wait, and the job is
// due then. So is one that holds a number but no whole one as the wait in
// Go reads it (checkpoint.Timer): suspend took '1e3' for a wake time long
// past and made the job available at once, where the wait, which read no
// wake time, suspended again, for ever.
func TestUnreadableTimerIsSetAnew(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range append([]string{"1e3", "5.5", "0x10", " 5", "5 "}, unreadableTimes...) {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "w"}, store.NewJob{Local: "c"})
				held := f.claimLeases(3, "w1")
				f.rdb.HSet(f.ctx, f.p.Job("w"), checkpoint.TimerPrefix+"nap", v)
				spec, err := store.SuspendSpec(&sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}})
				if err != nil {
					t.Fatal(err)
				}
				res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
					{Lease: held["a"], Code: store.CodeOK},
					{Lease: held["w"], Code: store.CodeSuspend, Data: []byte(spec)},
					{Lease: held["c"], Code: store.CodeOK},
				})
				if err != nil {
					t.Fatalf("ack: %v (a is %q)", err, f.rawState("a"))
				}
				if res[0].State != "completed" || res[1].State != "scheduled" || res[2].State != "completed" {
					t.Fatalf("ack %+v, want a and c completed, w scheduled", res)
				}
				if at, ok := f.due("w"); !ok || at != float64(epoch.Add(time.Hour).UnixMilli()) {
					t.Errorf("w due at %v (indexed %v), want %v", at, ok, epoch.Add(time.Hour).UnixMilli())
				}
				f.clk.Advance(time.Hour)
				if got := f.claimed("n1"); !slices.Equal(got, []string{"w"}) {
					t.Errorf("claimed %v once the timer is due, want w", got)
				}
			})
		}
	}
}

// TestTimerOfJobHashWinsOverStepsHash: a timer is read from the job's
// hash first, and from its steps hash (where an older release kept it)
// only when the job's hash holds none readable, as suspend reads it. The
// claim gave the attempt the steps hash's value over the job hash's: an
// unreadable one left there (corrupt data), which suspend had replaced
// with a wake time in the job's hash, was the one the wait read, and the
// wait never fired while suspend found it due: the job ran for ever.
func TestTimerOfJobHashWinsOverStepsHash(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "w"})
			j := f.claimOne("w1")
			f.rdb.HSet(f.ctx, f.p.Steps("w"), checkpoint.TimerPrefix+"nap", "x")
			f.rdb.HSet(f.ctx, f.p.Job("w"), keys.FieldHasSteps, "1")
			if s := f.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: time.Hour}}}); s != "scheduled" {
				t.Fatalf("suspended: %s", s)
			}
			f.clk.Advance(time.Hour)
			j = f.claimOne("w1")
			want := strconv.FormatInt(epoch.Add(time.Hour).UnixMilli(), 10)
			if got := string(j.Steps[checkpoint.TimerPrefix+"nap"]); got != want {
				t.Fatalf("the claimed attempt's timer nap: %q, want the job hash's %s", got, want)
			}
			if got, _ := f.get("w"); string(got.Steps[checkpoint.TimerPrefix+"nap"]) != want {
				t.Fatalf("the job's timer nap as read: %q, want %s", got.Steps[checkpoint.TimerPrefix+"nap"], want)
			}
		})
	}
}
