package flow

import (
	"slices"
	"testing"
	"time"
)

// dstZones are zones whose clocks change in 2026 in the ways a schedule
// meets: by an hour at night (New York, London, Sydney, Santiago), at
// midnight (Havana, Beirut, Cairo, Asuncion), by half an hour (Lord Howe),
// with a negative summer offset (Dublin), far from UTC (Chatham), twice
// more around Ramadan (Casablanca). Written by a helper's audit of
// schedules, which ran them over every zone of the host's zoneinfo (10 s).
var dstZones = []string{
	"America/New_York", "Europe/London", "Australia/Sydney", "America/Santiago", "America/Havana", "Asia/Beirut",
	"Africa/Cairo", "America/Asuncion", "Australia/Lord_Howe", "Europe/Dublin", "Pacific/Chatham", "Africa/Casablanca",
}

// refWall is a reference for a cron whose hour is set: walking minute by
// minute, each matching wall-clock time ticks at the first minute whose
// wall clock reaches it (at or past it): once, at its first occurrence or
// at the jump that skipped it.
func refWall(tm timing, loc *time.Location, from, to time.Time) []time.Time {
	spec := *tm.cron
	spec.Location = time.UTC
	matches := func(w time.Time) bool { // w: a wall time read as UTC
		return spec.Next(w.Add(-time.Second)).Equal(w)
	}
	var out []time.Time
	max := wallClock(from, loc)
	for u := from.Truncate(time.Minute).Add(time.Minute); !u.After(to); u = u.Add(time.Minute) {
		w := wallClock(u, loc)
		if !w.After(max) {
			continue
		}
		hit := false
		for x := max.Truncate(time.Minute).Add(time.Minute); !x.After(w); x = x.Add(time.Minute) {
			if matches(x) {
				hit = true
			}
		}
		if hit {
			out = append(out, u)
		}
		max = w
	}
	return out
}

// walkChanges runs check for each of exprs in each zone of dstZones, in
// the window of span either side of each of the zone's 2026 clock
// changes, with the ticks next gives there (got); check reports what the
// walk wants, and the first 20 differences fail the test.
func walkChanges(t *testing.T, exprs []string, span time.Duration, want func(tm timing, loc *time.Location, from, to time.Time) []time.Time) {
	t.Helper()
	bad := 0
	for _, z := range dstZones {
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		var changes []time.Time
		for x := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); x.Year() < 2027; {
			_, end := x.In(loc).ZoneBounds()
			if end.IsZero() {
				break
			}
			changes = append(changes, end)
			x = end
		}
		for _, ch := range changes {
			from, to := ch.Add(-span), ch.Add(span)
			for _, e := range exprs {
				tm, _, err := parseTiming(e, 0, z)
				if err != nil {
					t.Fatal(err)
				}
				var got []time.Time
				for x := tm.next(from); !x.IsZero() && !x.After(to); x = tm.next(x) {
					got = append(got, x.UTC())
				}
				if w := want(tm, loc, from, to); !slices.EqualFunc(got, w, time.Time.Equal) && bad < 20 {
					bad++
					t.Errorf("%s %q around %v: got %v, want %v", z, e, ch, got, w)
				}
			}
		}
	}
}

// TestTimingWallAgainstWalk: a daily cron at a set wall time ("30 2 * * *",
// "0 0 * * *", "0 1,2,3 * * *") ticks once per matching wall time in each
// zone of dstZones around each of its 2026 clock changes, as a walk minute
// by minute finds (refWall).
func TestTimingWallAgainstWalk(t *testing.T) {
	t.Parallel()
	walkChanges(t, []string{"30 2 * * *", "0 0 * * *", "0 1 * * *", "30 23 * * *", "0 3 * * *"}, 36*time.Hour, refWall)
}

// TestTimingElapsedAgainstWalk: a cron whose hour is '*' ticks at every
// minute whose wall clock matches, around each 2026 clock change of the
// zones of dstZones.
func TestTimingElapsedAgainstWalk(t *testing.T) {
	t.Parallel()
	walkChanges(t, []string{"0 * * * *", "30 * * * *", "*/20 * * * 0", "45 * 1 * *"}, 30*time.Hour,
		func(tm timing, loc *time.Location, from, to time.Time) []time.Time {
			spec := *tm.cron
			spec.Location = time.UTC
			var want []time.Time
			for u := from.Truncate(time.Minute).Add(time.Minute); !u.After(to); u = u.Add(time.Minute) {
				if w := wallClock(u, loc); spec.Next(w.Add(-time.Second)).Equal(w) {
					want = append(want, u)
				}
			}
			return want
		})
}

// TestRecentAgainstWalk: recent(after, now, k) is the last k of the
// ticks a plain walk of next finds in (after, now], for random windows.
func TestRecentAgainstWalk(t *testing.T) {
	t.Parallel()
	type tcase struct {
		expr  string
		every time.Duration
		tz    string
	}
	cases := []tcase{
		{"* * * * *", 0, ""}, {"0 0 29 2 *", 0, ""}, {"30 2 * * *", 0, "America/New_York"},
		{"0 * * * *", 0, "Australia/Lord_Howe"}, {"0 0 1 1 *", 0, "Asia/Tokyo"}, {"", 7 * time.Second, ""},
		{"", 25 * time.Hour, ""}, {"*/7 3 * * 1", 0, "Europe/London"}, {"0 0 31 * *", 0, ""},
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	seed := uint64(1)
	rnd := func(n int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64((seed >> 33) % uint64(n))
	}
	for _, c := range cases {
		tm, _, err := parseTiming(c.expr, c.every, c.tz)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200; i++ {
			after := base.Add(time.Duration(rnd(3*365*24*3600)) * time.Second)
			now := after.Add(time.Duration(rnd(2*365*24*3600/(1+rnd(1000)))) * time.Second)
			k := 1 + int(rnd(6))
			var all []time.Time
			for x := tm.next(after); !x.IsZero() && !x.After(now); x = tm.next(x) {
				all = append(all, x)
			}
			want := all[max(0, len(all)-k):]
			got := tm.recent(after, now, k)
			if !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("%q/%v/%s recent(%v, %v, %d) = %v, want %v", c.expr, c.every, c.tz, after, now, k, got, want)
				break
			}
		}
	}
}

// TestTimingFixedZonesAgainstWalk: zones far from UTC, with no clock change, at
// the turn of the year and on a leap day.
func TestTimingFixedZonesAgainstWalk(t *testing.T) {
	t.Parallel()
	for _, z := range []string{"Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kathmandu", "UTC", "Pacific/Chatham", "America/St_Johns"} {
		loc, err := time.LoadLocation(z)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []string{"30 2 * * *", "0 0 1 1 *", "0 12 29 2 *", "59 23 31 12 *", "0 0 * * 0"} {
			tm, _, err := parseTiming(e, 0, z)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []time.Time{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)} {
				from, to := c.Add(-40*time.Hour), c.Add(40*time.Hour)
				var got []time.Time
				for x := tm.next(from); !x.IsZero() && !x.After(to); x = tm.next(x) {
					got = append(got, x.UTC())
				}
				if want := refWall(tm, loc, from, to); !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("%s %q around %v: got %v, want %v", z, e, c, got, want)
				}
			}
		}
	}
}
