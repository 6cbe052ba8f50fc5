package flow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/sluicehq/sluice/internal/names"
	"github.com/sluicehq/sluice/sluicetype"
)

// Schedule is a periodic job: Args enqueued at every tick of Cron or Every.
// Register it with Scheduler.Add. However many schedulers run it, each tick
// is enqueued once, as the job with ID "sched:<Name>:<tick in unix
// seconds>" (see Scheduler).
type Schedule struct {
	// Name identifies the schedule across the fleet, in job IDs and in the
	// operator API: 1 to 64 letters, digits, '_', '.' or '-'. Every
	// scheduler that runs a schedule of this name should define it alike.
	Name string
	// Cron is a standard cron expression: five fields (minute, hour, day of
	// month, month, day of week) or @yearly, @monthly, @weekly, @daily,
	// @hourly. Set Cron or Every, not both.
	Cron string
	// Every is a fixed interval, a whole number of seconds. Its ticks fall
	// on multiples of it since the Unix epoch, so every time.Hour ticks on
	// the hour, whichever scheduler computes them.
	Every time.Duration
	// TimeZone is the IANA zone Cron is read in, such as "Europe/Paris".
	// Default UTC. Not for Every. Not "Local", nor tzdata's "localtime"
	// or "posixrules": each is the host's own zone. When the zone's clocks change, a Cron
	// whose hour field is not '*' still runs once at each of its times of
	// the day: a time the clocks skip runs at the first instant after the
	// jump, a time they repeat runs at its first occurrence only. A
	// skipped time and another of its times that falls on that first
	// instant are one tick, one job: "0 2,3 * * *" runs once, at 03:00,
	// on the day the clocks go from 02:00 to 03:00. A Cron
	// whose hour field means every hour ('*', '?', '*/1', or a list with
	// one of them) runs by elapsed time: once in each hour that passes,
	// the repeated one included.
	TimeZone string
	// Args are the arguments of every job enqueued.
	Args Args
	// Opts apply to every job enqueued; WithID is not allowed (the schedule
	// names its jobs), nor are WithRunAt and WithDeadline (a fixed time,
	// the same for every tick: WithDelay is per tick).
	Opts []EnqueueOption
	// Missed says what to do with ticks missed while no scheduler ran.
	// Default SkipMissed.
	Missed MissedPolicy
	// Grace is how late a tick may be enqueued and still count as on time
	// rather than missed. A tick is also missed once the next tick is due.
	// Default DefaultGrace; at least MinGrace.
	Grace time.Duration
}

// DefaultGrace is the default of Schedule.Grace.
const DefaultGrace = time.Minute

// MinGrace is the least Schedule.Grace: a scheduler's round, a Redis
// call, a pause of the process take some milliseconds, and a grace below
// them would count most ticks as missed (SkipMissed would then drop them).
const MinGrace = time.Second

// MaxCatchUp bounds CatchUp(n).
const MaxCatchUp = 1000

// MissedPolicy says what a scheduler does with missed ticks: the ticks
// that no scheduler enqueued on time (within Grace, before the next tick),
// typically because none was running. A tick that is on time is always
// enqueued, whatever the policy.
type MissedPolicy struct {
	mode missedMode
	n    int
}

type missedMode int

const (
	missedSkip missedMode = iota
	missedOnce
	missedCatchUp
)

var (
	// SkipMissed drops missed ticks: the schedule goes on with the next
	// tick that is on time. The default.
	SkipMissed = MissedPolicy{}
	// RunOnce enqueues one job for all the missed ticks, however many, as
	// the job of the most recent of them.
	RunOnce = MissedPolicy{mode: missedOnce}
)

// CatchUp enqueues the most recent n missed ticks (1 <= n <= MaxCatchUp),
// each as its own job, and drops older ones.
func CatchUp(n int) MissedPolicy { return MissedPolicy{mode: missedCatchUp, n: n} }

// String is the policy as the operator API shows it: "skip", "once" or
// "catch-up N".
func (p MissedPolicy) String() string {
	switch p.mode {
	case missedOnce:
		return "once"
	case missedCatchUp:
		return "catch-up " + strconv.Itoa(p.n)
	}
	return "skip"
}

// ScheduleError is a schedule rejected at registration: which schedule,
// which field and why. Err wraps ErrInvalid for a bad field, or the error
// enqueueing Args and Opts would give (ErrInvalid, ErrUnknownKind,
// ErrPayloadTooLarge).
type ScheduleError struct {
	Name  string
	Field string // "Name", "Cron", "Every", "TimeZone", "Missed", "Grace", "Args" or "Opts"
	Err   error
}

func (e *ScheduleError) Error() string {
	return fmt.Sprintf("schedule %q: %s: %v", e.Name, e.Field, e.Err)
}

func (e *ScheduleError) Unwrap() error { return e.Err }

// ErrScheduleNotFound: no scheduler has published a schedule of this name.
var ErrScheduleNotFound = sluicetype.ErrScheduleNotFound

// timing is when a schedule ticks: a parsed cron expression or an
// interval of whole seconds.
type timing struct {
	cron  *cron.SpecSchedule
	every int64 // seconds
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseTiming validates the when of a schedule; field names the culprit.
func parseTiming(expr string, every time.Duration, tz string) (tm timing, field string, err error) {
	bad := func(field, format string, a ...any) (timing, string, error) {
		return timing{}, field, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	switch {
	case expr == "" && every == 0:
		return bad("Every", "set Cron or Every")
	case expr != "" && every != 0:
		return bad("Every", "set Cron or Every, not both")
	case every < 0:
		return bad("Every", "interval %s is negative", every)
	case every > 0 && every%time.Second != 0:
		return bad("Every", "interval %s is not a whole number of seconds", every)
	case every > 0 && tz != "":
		return bad("TimeZone", "a time zone applies to Cron only")
	case every > 0:
		return timing{every: int64(every / time.Second)}, "", nil
	}
	loc := time.UTC
	if tz == "Local" || strings.EqualFold(tz, "localtime") || strings.EqualFold(tz, "posixrules") {
		// LoadLocation takes "Local" as each host's own zone, and loads
		// tzdata's "localtime" (a link to the host's /etc/localtime) and
		// "posixrules" (a link its tzdata build chooses) where the host
		// has them: schedulers on hosts in different zones would tick at
		// different instants
		return bad("TimeZone", "%q is each host's own zone: name an IANA zone", tz)
	}
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return bad("TimeZone", "%v", err)
		}
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return bad("Cron", "%q: set TimeZone instead of a TZ= prefix", expr)
	}
	if strings.HasPrefix(expr, "@every") {
		return bad("Cron", "%q: use Every for fixed intervals", expr)
	}
	sched, err := parseCron(expr)
	if err != nil {
		return bad("Cron", "%q: %v", expr, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return bad("Cron", "%q is not a cron expression", expr)
	}
	spec.Location = loc
	tm = timing{cron: spec}
	if tm.next(time.Now()).IsZero() {
		return bad("Cron", "%q never fires", expr)
	}
	return tm, "", nil
}

// parseCron is the cron parser, which must not panic on any input.
func parseCron(expr string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, errors.New("unparseable")
		}
	}()
	return cronParser.Parse(expr)
}

// cronStar is the bit robfig/cron sets in a field written '*'.
const cronStar = 1 << 63

// next is the first tick after t, or zero if there is none within five
// years. A cron expression whose hour is not '*' runs once a day at each
// of its wall-clock times, whatever the clocks do: a time that a clock
// turned forward skips runs at the first instant after the jump, and a
// time that a clock turned back repeats runs at its first occurrence
// only (wallNext). One whose hour is '*' runs by elapsed time (every hour
// that passes, none that does not: elapsedNext); so do '?', '*/1' and a
// list with one of them, which the cron library reads as '*'.
func (tm timing) next(t time.Time) time.Time {
	if c := tm.cron; c != nil {
		if c.Hour&cronStar != 0 {
			return tm.elapsedNext(t)
		}
		return tm.wallNext(t)
	}
	s := t.Unix()
	n := s / tm.every
	if s < 0 && s%tm.every != 0 {
		n-- // floor
	}
	return time.Unix((n+1)*tm.every, 0)
}

// wallNext is next of a cron expression whose hour is set: the first
// instant after t at which one of the wall-clock times the expression
// matches first occurs (firstAt). The cron library matches the wall-clock
// times themselves, read as UTC, where no clock changes; it is not asked
// for instants in the zone: stepping an hour at a time from before a
// change of half an hour (Australia/Lord_Howe), it lands on half hours
// after it and skipped the first time of that day it matched. The wall
// times from t's own on are enough: an earlier one first occurred before
// t, as t's did.
func (tm timing) wallNext(t time.Time) time.Time {
	loc := tm.cron.Location
	probe := *tm.cron
	probe.Location = time.UTC
	for m := probe.Next(wallClock(t, loc)); !m.IsZero(); m = probe.Next(m) {
		if at := firstAt(m, loc); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// elapsedNext is next of a cron expression whose hour is '*': the first
// instant after t whose wall-clock time in the zone matches. Between two
// changes of the zone's offset the wall clock is the instant moved by the
// offset, so the cron library, asked in UTC, finds the match; a match
// past the span's end is not a wall-clock time of this span, and the
// search goes on from the next. The cron library asked in the zone
// itself steps to the day after a day whose midnight the clocks skip
// (Asia/Beirut, 29 March 2026) and loses its ticks, or never returns on a
// day the zone skipped (Pacific/Apia, 30 December 2011).
func (tm timing) elapsedNext(t time.Time) time.Time {
	loc := tm.cron.Location
	probe := *tm.cron
	probe.Location = time.UTC
	for {
		span := t.Add(time.Nanosecond).In(loc) // the first instant after t
		_, off := span.Zone()
		_, end := span.ZoneBounds()
		m := probe.Next(t.Add(time.Duration(off) * time.Second))
		if m.IsZero() {
			return time.Time{}
		}
		at := m.Add(-time.Duration(off) * time.Second)
		if end.IsZero() || at.Before(end) {
			return at.In(loc)
		}
		t = end.Add(-time.Nanosecond) // the next span starts at end
	}
}

// wallClock is t's wall-clock time in loc, as a UTC time.
func wallClock(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	return t.Add(time.Duration(off) * time.Second).UTC()
}

// zoneSpan bounds how far around a wall-clock time firstAt looks for the
// offsets in effect: longer than any clock change (a day, when a zone
// moved across the date line), shorter than the time between two.
const zoneSpan = 25 * time.Hour

// firstAt is the first instant whose wall-clock time in loc is m (a UTC
// time): the earlier one when a clock turned back repeats m, and the
// instant of the jump when a clock turned forward skipped it.
func firstAt(m time.Time, loc *time.Location) time.Time {
	guess := time.Date(m.Year(), m.Month(), m.Day(), m.Hour(), m.Minute(), m.Second(), m.Nanosecond(), loc)
	var first, latest time.Time
	for _, x := range []time.Time{guess.Add(-zoneSpan), guess, guess.Add(zoneSpan)} {
		_, off := x.Zone()
		u := m.Add(-time.Duration(off) * time.Second) // m, read with that offset
		if wallClock(u, loc).Equal(m) && (first.IsZero() || u.Before(first)) {
			first = u
		}
		if u.After(latest) {
			latest = u
		}
	}
	if first.IsZero() {
		// skipped: read with the offset before the jump, m is an instant
		// after it, in the zone the jump started
		first, _ = latest.In(loc).ZoneBounds()
	}
	return first.In(loc)
}

// recent returns up to k of the most recent ticks in (after, now],
// oldest first. It looks back over a window that grows until it holds k
// ticks or reaches after, so a long outage costs no more than a short one.
func (tm timing) recent(after, now time.Time, k int) []time.Time {
	const longest = 50 * 365 * 24 * time.Hour
	span := time.Minute
	if tm.every > 0 {
		span = time.Duration(tm.every) * time.Second
	}
	if span > longest/time.Duration(k+1) {
		span = longest
	} else {
		span *= time.Duration(k + 1)
	}
	for ; ; span = min(4*span, longest) {
		from, whole := now.Add(-span), span == longest
		if whole || !from.After(after) {
			from, whole = after, true
		}
		ticks := make([]time.Time, 0, k+1)
		for t := tm.next(from); !t.IsZero() && !t.After(now); t = tm.next(t) {
			if ticks = append(ticks, t); len(ticks) > k {
				ticks = append(ticks[:0], ticks[1:]...)
			}
		}
		if len(ticks) == k || whole {
			return ticks
		}
	}
}

// plan decides, at store time now, what to do with the ticks of the
// window ws[0] = (last, until] (until is now, or before it the time of a
// pause): which of them to enqueue, and the new last tick (zero when no
// tick is due). ws[1:] are the windows decided after it (owed windows of
// ticks due before a pause, then the one up to now): the policy counts
// their ticks with ws[0]'s, so that one outage with pauses in it keeps
// the jobs the policy keeps for one outage. Only the most recent due
// tick of them all can be on time; the others are missed, and so is it
// when it is later than grace.
func plan(tm timing, p MissedPolicy, grace time.Duration, ws [][2]time.Time, now time.Time) (enqueue []time.Time, newLast time.Time) {
	k := 1
	switch p.mode {
	case missedOnce:
		k = 2
	case missedCatchUp:
		k = p.n + 1
	}
	first := tm.recent(ws[0][0], ws[0][1], 1)
	if len(first) == 0 {
		return nil, time.Time{}
	}
	newLast = first[0]
	var ticks []time.Time // the most recent k of all the windows, oldest first
	for i := len(ws) - 1; i >= 0 && len(ticks) < k; i-- {
		ticks = append(tm.recent(ws[i][0], ws[i][1], k-len(ticks)), ticks...)
	}
	latest := ticks[len(ticks)-1]
	missed, onTime := ticks, now.Sub(latest) <= grace
	if onTime {
		missed = ticks[:len(ticks)-1]
	}
	var keep []time.Time
	switch p.mode {
	case missedOnce:
		if len(missed) > 0 {
			keep = append(keep, missed[len(missed)-1])
		}
	case missedCatchUp:
		keep = append(keep, missed[max(0, len(missed)-p.n):]...)
	}
	if onTime {
		keep = append(keep, latest)
	}
	for _, t := range keep {
		if t.After(ws[0][0]) && !t.After(newLast) {
			enqueue = append(enqueue, t)
		}
	}
	return enqueue, newLast
}

// validName reports whether name is a valid schedule name.
// ValidScheduleName reports whether name can name a schedule: 1 to 64
// letters, digits and "_.-".
func ValidScheduleName(name string) bool { return names.Valid(name, 64, "_.-") }

// tickID is the job ID of a schedule's tick.
func tickID(name string, tick time.Time) string {
	return "sched:" + name + ":" + strconv.FormatInt(tick.Unix(), 10)
}
