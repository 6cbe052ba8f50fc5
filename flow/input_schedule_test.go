package flow_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/flow"
)

// TestScheduleLocalTimeZone: Schedule.TimeZone is "the IANA zone Cron
// is read in", and every scheduler running a schedule must define it
// alike. "Local" (time.LoadLocation's name for the process's own zone,
// from $TZ or /etc/localtime) is no IANA zone: two schedulers on hosts in
// different zones tick the same definition at different instants, under
// different tick IDs (sched:<name>:<unix>), so each enqueues its own
// jobs. It is accepted; it should be a ScheduleError (TimeZone,
// ErrInvalid).
func TestScheduleLocalTimeZone(t *testing.T) {
	e := newSchedEnv(t)
	s := e.newScheduler()
	err := s.Add(flow.Schedule{Name: "nightly", Cron: "0 3 * * *", TimeZone: "Local", Args: report{}})
	var se *flow.ScheduleError
	if !errors.Is(err, flow.ErrInvalid) || !errors.As(err, &se) || se.Field != "TimeZone" {
		t.Fatalf(`Add with TimeZone "Local": %v; want a ScheduleError on TimeZone (ErrInvalid): the zone is each host's own`, err)
	}
}

// TestScheduleHostTimeZoneFileRefused: tzdata's "localtime" (a link to
// the host's /etc/localtime, installed by Debian's tzdata, Alpine's and
// others) and "posixrules" (a link the host's tzdata build chooses) load
// as zones by time.LoadLocation, yet name each host's own zone as "Local"
// does: schedulers on hosts in different zones would tick one definition
// at different instants, under different tick IDs, each enqueueing its
// own jobs. Add refuses them as it refuses "Local" (on a host with no
// such file LoadLocation refuses them already).
func TestScheduleHostTimeZoneFileRefused(t *testing.T) {
	e := newSchedEnv(t)
	s := e.newScheduler()
	for i, tz := range []string{"localtime", "posixrules"} {
		err := s.Add(flow.Schedule{Name: "nightly" + string(rune('a'+i)), Cron: "0 3 * * *", TimeZone: tz, Args: report{}})
		var se *flow.ScheduleError
		if !errors.Is(err, flow.ErrInvalid) || !errors.As(err, &se) || se.Field != "TimeZone" {
			t.Errorf(`Add with TimeZone %q: %v; want a ScheduleError on TimeZone (ErrInvalid): the zone is each host's own`, tz, err)
		}
	}
}
