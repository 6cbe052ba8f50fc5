package flow

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestPlan: which due ticks each missed-run policy enqueues, and the new
// last tick, from the last tick and the store time.
func TestPlan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(minutes int, seconds ...int) time.Time {
		d := time.Duration(minutes) * time.Minute
		for _, s := range seconds {
			d += time.Duration(s) * time.Second
		}
		return t0.Add(d)
	}
	mins := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = at(m)
		}
		return out
	}
	minutely := mustTiming(t, "* * * * *", 0, "")
	hourly := mustTiming(t, "", time.Hour, "")
	cases := []struct {
		name      string
		tm        timing
		policy    MissedPolicy
		grace     time.Duration
		last, now time.Time
		want      []time.Time
		wantLast  time.Time
	}{
		{"nothing due", minutely, SkipMissed, time.Minute, at(0), at(0, 59), nil, time.Time{}},
		{"on time", minutely, SkipMissed, time.Minute, at(0), at(1), mins(1), at(1)},
		{"on time, a little late", minutely, SkipMissed, time.Minute, at(0), at(1, 20), mins(1), at(1)},
		{"last not on a tick", minutely, SkipMissed, time.Minute, at(0, 30), at(1), mins(1), at(1)},
		// A 10-minute outage after tick 0, back at tick 10 exactly: tick 10
		// is on time, 1..9 were missed.
		{"outage, skip", minutely, SkipMissed, time.Minute, at(0), at(10), mins(10), at(10)},
		{"outage, once", minutely, RunOnce, time.Minute, at(0), at(10), mins(9, 10), at(10)},
		{"outage, catch up 3", minutely, CatchUp(3), time.Minute, at(0), at(10), mins(7, 8, 9, 10), at(10)},
		{"outage, catch up all", minutely, CatchUp(100), time.Minute, at(0), at(10), mins(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), at(10)},
		// Back at 10:45 with a 30s grace: tick 10 is missed too.
		{"late, skip", minutely, SkipMissed, 30 * time.Second, at(0), at(10, 45), nil, at(10)},
		{"late, once", minutely, RunOnce, 30 * time.Second, at(0), at(10, 45), mins(10), at(10)},
		{"late, catch up 3", minutely, CatchUp(3), 30 * time.Second, at(0), at(10, 45), mins(8, 9, 10), at(10)},
		{"one late tick, once", minutely, RunOnce, 30 * time.Second, at(0), at(1, 45), mins(1), at(1)},
		{"one late tick, skip", minutely, SkipMissed, 30 * time.Second, at(0), at(1, 45), nil, at(1)},
		{"interval on the hour", hourly, SkipMissed, time.Minute, at(17), at(60, 5), mins(60), at(60)},
		{"a year down, catch up 2", minutely, CatchUp(2), time.Minute, at(0), at(365 * 24 * 60), mins(365*24*60-2, 365*24*60-1, 365*24*60), at(365 * 24 * 60)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, last := plan(tc.tm, tc.policy, tc.grace, [][2]time.Time{{tc.last, tc.now}}, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if !last.Equal(tc.wantLast) {
				t.Errorf("last = %v, want %v", last, tc.wantLast)
			}
		})
	}
}

// TestTiming: cron expressions are read in their time zone (DST
// included); intervals tick on multiples since the Unix epoch.
func TestTiming(t *testing.T) {
	t.Parallel()
	paris := mustTiming(t, "0 9 * * *", 0, "Europe/Paris")
	cases := []struct {
		name     string
		tm       timing
		from     time.Time
		wantNext time.Time
	}{
		{"paris winter", paris, time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC)},
		{"paris summer", paris, time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 10, 7, 0, 0, 0, time.UTC)},
		{"utc by default", mustTiming(t, "@daily", 0, ""), time.Date(2026, 7, 10, 0, 0, 1, 0, time.UTC), time.Date(2026, 7, 11, 0, 0, 0, 0, time.UTC)},
		{"every 7s", mustTiming(t, "", 7*time.Second, ""), time.Unix(20, 0), time.Unix(21, 0)},
		{"every 7s, on a tick", mustTiming(t, "", 7*time.Second, ""), time.Unix(21, 0), time.Unix(28, 0)},
	}
	for _, tc := range cases {
		if got := tc.tm.next(tc.from); !got.Equal(tc.wantNext) {
			t.Errorf("%s: next(%v) = %v, want %v", tc.name, tc.from, got, tc.wantNext)
		}
	}
}

// TestParseTiming: every bad schedule timing is ErrInvalid, naming the
// field.
func TestParseTiming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cron  string
		every time.Duration
		tz    string
		field string
	}{
		{"neither", "", 0, "", "Every"},
		{"both", "* * * * *", time.Minute, "", "Every"},
		{"negative interval", "", -time.Minute, "", "Every"},
		{"fractional interval", "", 1500 * time.Millisecond, "", "Every"},
		{"zone with interval", "", time.Minute, "UTC", "TimeZone"},
		{"unknown zone", "* * * * *", 0, "Mars/Olympus_Mons", "TimeZone"},
		{"garbage", "every minute please", 0, "", "Cron"},
		{"six fields", "0 * * * * *", 0, "", "Cron"},
		{"out of range", "61 * * * *", 0, "", "Cron"},
		{"zero step", "*/0 * * * *", 0, "", "Cron"},
		{"TZ prefix", "TZ=UTC * * * * *", 0, "", "Cron"},
		{"TZ prefix without space", "TZ=UTC", 0, "", "Cron"},
		{"@every", "@every 1m", 0, "", "Cron"},
		{"unknown descriptor", "@sometimes", 0, "", "Cron"},
		{"never fires", "0 0 30 2 *", 0, "", "Cron"},
	}
	for _, tc := range cases {
		_, field, err := parseTiming(tc.cron, tc.every, tc.tz)
		if !errors.Is(err, ErrInvalid) || field != tc.field {
			t.Errorf("%s: field %q, err %v; want %s, ErrInvalid", tc.name, field, err, tc.field)
		}
	}
}

// FuzzParseCron: the cron parser never panics.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 * jan mon", "@hourly", "0-", "1-0/0 * * * *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tm, _, err := parseTiming(s, 0, ""); err == nil {
			tm.next(time.Now())
		}
	})
}

func mustTiming(t *testing.T, expr string, every time.Duration, tz string) timing {
	t.Helper()
	tm, _, err := parseTiming(expr, every, tz)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestTimingDST: a cron expression with a set hour runs once on the days
// its zone's clocks change: a wall-clock time the clocks skip runs at the
// first instant after the jump, one they repeat runs at its first
// occurrence only. An expression with '*' for the hour runs by elapsed
// time: every hour that passes, none that does not.
func TestTimingDST(t *testing.T) {
	t.Parallel()
	utc := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, time.UTC) }
	cases := []struct {
		name, expr, tz string
		from, to       time.Time
		want           []time.Time
	}{
		// New York: on 8 March 2026 02:00 EST becomes 03:00 EDT (07:00 UTC)
		{"gap: runs at the jump", "30 2 * * *", "America/New_York", utc(3, 7, 12, 0), utc(3, 9, 12, 0),
			[]time.Time{utc(3, 8, 7, 0), utc(3, 9, 6, 30)}},
		{"gap: every skipped time is one tick", "0,30 2 * * *", "America/New_York", utc(3, 7, 12, 0), utc(3, 9, 12, 0),
			[]time.Time{utc(3, 8, 7, 0), utc(3, 9, 6, 0), utc(3, 9, 6, 30)}},
		{"gap: a set time after it is the same tick", "0 2,3 * * *", "America/New_York", utc(3, 8, 0, 0), utc(3, 8, 12, 0),
			[]time.Time{utc(3, 8, 7, 0)}},
		{"gap: hourly by elapsed time", "30 * * * *", "America/New_York", utc(3, 8, 5, 0), utc(3, 8, 8, 0),
			[]time.Time{utc(3, 8, 5, 30), utc(3, 8, 6, 30), utc(3, 8, 7, 30)}},
		// New York: on 1 November 2026 02:00 EDT becomes 01:00 EST (06:00 UTC)
		{"overlap: first occurrence only", "30 1 * * *", "America/New_York", utc(10, 31, 12, 0), utc(11, 2, 12, 0),
			[]time.Time{utc(11, 1, 5, 30), utc(11, 2, 6, 30)}},
		{"overlap: a stepped minute", "*/30 1 * * *", "America/New_York", utc(10, 31, 12, 0), utc(11, 1, 12, 0),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 5, 30)}},
		{"overlap: the hour after it", "0 2 * * *", "America/New_York", utc(10, 31, 12, 0), utc(11, 1, 12, 0),
			[]time.Time{utc(11, 1, 7, 0)}},
		{"overlap: hourly by elapsed time", "0 * * * *", "America/New_York", utc(11, 1, 4, 30), utc(11, 1, 7, 30),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 6, 0), utc(11, 1, 7, 0)}},
		{"overlap: '*/1' hours are '*'", "0 */1 * * *", "America/New_York", utc(11, 1, 4, 30), utc(11, 1, 7, 30),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 6, 0), utc(11, 1, 7, 0)}},
		{"overlap: '?' hours are '*'", "0 ? * * *", "America/New_York", utc(11, 1, 4, 30), utc(11, 1, 7, 30),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 6, 0), utc(11, 1, 7, 0)}},
		{"overlap: a list with '*/1' is '*'", "0 */1,3 * * *", "America/New_York", utc(11, 1, 4, 30), utc(11, 1, 7, 30),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 6, 0), utc(11, 1, 7, 0)}},
		{"overlap: '0/1' hours are set times", "0 0/1 * * *", "America/New_York", utc(11, 1, 4, 30), utc(11, 1, 7, 30),
			[]time.Time{utc(11, 1, 5, 0), utc(11, 1, 7, 0)}},
		// London: on 25 October 2026 02:00 BST becomes 01:00 GMT (01:00 UTC)
		{"overlap: London", "30 1 * * *", "Europe/London", utc(10, 24, 12, 0), utc(10, 26, 12, 0),
			[]time.Time{utc(10, 25, 0, 30), utc(10, 26, 1, 30)}},
		// Lord Howe turns its clocks by 30 minutes: on 5 April 2026 02:00
		// (UTC+11) becomes 01:30 (UTC+10:30) at 4 April 15:00 UTC, and on 4
		// October 2026 02:00 (UTC+10:30) becomes 02:30 (UTC+11) at 3
		// October 15:30 UTC. The cron library, stepping an hour at a time
		// from before such a change, lands on half hours after it and
		// skipped the first time of the day it matched there.
		{"half-hour overlap: the time of the turn", "0 2 * * *", "Australia/Lord_Howe", utc(4, 3, 12, 0), utc(4, 6, 12, 0),
			[]time.Time{utc(4, 3, 15, 0), utc(4, 4, 15, 30), utc(4, 5, 15, 30)}},
		{"half-hour overlap: later that day", "0 5 * * *", "Australia/Lord_Howe", utc(4, 3, 12, 0), utc(4, 6, 12, 0),
			[]time.Time{utc(4, 3, 18, 0), utc(4, 4, 18, 30), utc(4, 5, 18, 30)}},
		{"half-hour overlap: first occurrence only", "30 1 * * *", "Australia/Lord_Howe", utc(4, 3, 12, 0), utc(4, 6, 12, 0),
			[]time.Time{utc(4, 3, 14, 30), utc(4, 4, 14, 30), utc(4, 5, 15, 0)}},
		{"half-hour gap: runs at the jump", "15 2 * * *", "Australia/Lord_Howe", utc(10, 2, 12, 0), utc(10, 5, 12, 0),
			[]time.Time{utc(10, 2, 15, 45), utc(10, 3, 15, 30), utc(10, 4, 15, 15)}},
		{"half-hour gap: the hour after it", "0 3 * * *", "Australia/Lord_Howe", utc(10, 2, 12, 0), utc(10, 5, 12, 0),
			[]time.Time{utc(10, 2, 16, 30), utc(10, 3, 16, 0), utc(10, 4, 16, 0)}},
		// Beirut: on 29 March 2026 (a Sunday) 00:00 EET becomes 01:00 EEST
		// (28 March 22:00 UTC); on 25 October 00:00 EEST becomes 24 October
		// 23:00 EET (21:00 UTC). Cairo: on 24 April 2026 (a Friday) 00:00
		// becomes 01:00 (23 April 22:00 UTC). Apia skipped 30 December
		// 2011: 29 December 24:00 (UTC-10) became 31 December 00:00
		// (UTC+14) at 10:00 UTC.
		{"midnight gap: the day's first hour", "0 * * * 0", "Asia/Beirut", utc(3, 28, 12, 0), utc(3, 29, 0, 30),
			[]time.Time{utc(3, 28, 22, 0), utc(3, 28, 23, 0), utc(3, 29, 0, 0)}},
		{"midnight gap: Cairo", "0 * * * 5", "Africa/Cairo", utc(4, 23, 12, 0), utc(4, 24, 0, 30),
			[]time.Time{utc(4, 23, 22, 0), utc(4, 23, 23, 0), utc(4, 24, 0, 0)}},
		{"midnight overlap: the repeated hour is the day before", "0 * * * 6", "Asia/Beirut", utc(10, 24, 17, 30), utc(10, 24, 22, 30),
			[]time.Time{utc(10, 24, 18, 0), utc(10, 24, 19, 0), utc(10, 24, 20, 0), utc(10, 24, 21, 0)}},
		{"midnight overlap: the day after", "0 * * * 0", "Asia/Beirut", utc(10, 24, 17, 30), utc(10, 25, 0, 30),
			[]time.Time{utc(10, 24, 22, 0), utc(10, 24, 23, 0), utc(10, 25, 0, 0)}},
		{"a skipped day: hourly", "0 * * * *", "Pacific/Apia", time.Date(2011, 12, 30, 8, 30, 0, 0, time.UTC), time.Date(2011, 12, 30, 11, 30, 0, 0, time.UTC),
			[]time.Time{time.Date(2011, 12, 30, 9, 0, 0, 0, time.UTC), time.Date(2011, 12, 30, 10, 0, 0, 0, time.UTC), time.Date(2011, 12, 30, 11, 0, 0, 0, time.UTC)}},
		{"a skipped day: none of its hours", "0 * 30 12 *", "Pacific/Apia", time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC), time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC),
			nil},
	}
	for _, tc := range cases {
		tm := mustTiming(t, tc.expr, 0, tc.tz)
		var got []time.Time
		for x := tm.next(tc.from); !x.IsZero() && !x.After(tc.to); x = tm.next(x) {
			got = append(got, x.UTC())
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %q in %s, ticks (-want +got):\n%s", tc.name, tc.expr, tc.tz, diff)
		}
		if r := tm.recent(tc.from, tc.to, 10); !cmp.Equal(tc.want, utcs(r), cmpopts.EquateEmpty()) {
			t.Errorf("%s: recent = %v, want %v", tc.name, r, tc.want)
		}
	}
}

func utcs(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// TestPlanAcrossWindows: with owed windows (ticks due before a pause) to
// decide after the first, a policy counts the ticks of all of them, and
// keeps of the first window only what it keeps of them all. An outage
// from 0:30 to 8:00 with pauses 3:30..4:30 and 6:45..7:45, back on time
// at 8:00: missed 1, 2, 3, 5 and 6.
func TestPlanAcrossWindows(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(m, s int) time.Time { return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second) }
	minutely := mustTiming(t, "* * * * *", 0, "")
	w1, w2, w3 := [2]time.Time{at(0, 30), at(3, 30)}, [2]time.Time{at(4, 30), at(6, 45)}, [2]time.Time{at(7, 45), at(8, 0)}
	now := at(8, 0)
	for _, tc := range []struct {
		name     string
		policy   MissedPolicy
		ws       [][2]time.Time
		want     []time.Time
		wantLast time.Time
	}{
		{"skip, first window", SkipMissed, [][2]time.Time{w1, w2, w3}, nil, at(3, 0)},
		{"once, first window", RunOnce, [][2]time.Time{w1, w2, w3}, nil, at(3, 0)},
		{"once, second window", RunOnce, [][2]time.Time{w2, w3}, []time.Time{at(6, 0)}, at(6, 0)},
		{"once, last window", RunOnce, [][2]time.Time{w3}, []time.Time{at(8, 0)}, at(8, 0)},
		{"catch up 2, first window", CatchUp(2), [][2]time.Time{w1, w2, w3}, nil, at(3, 0)},
		{"catch up 4, first window", CatchUp(4), [][2]time.Time{w1, w2, w3}, []time.Time{at(2, 0), at(3, 0)}, at(3, 0)},
		{"catch up 4, second window", CatchUp(4), [][2]time.Time{w2, w3}, []time.Time{at(5, 0), at(6, 0)}, at(6, 0)},
		{"empty later window", RunOnce, [][2]time.Time{w1, {at(8, 0), at(8, 0)}}, []time.Time{at(3, 0)}, at(3, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, last := plan(minutely, tc.policy, time.Minute, tc.ws, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("enqueued (-want +got):\n%s", diff)
			}
			if !last.Equal(tc.wantLast) {
				t.Errorf("last = %v, want %v", last, tc.wantLast)
			}
		})
	}
}
