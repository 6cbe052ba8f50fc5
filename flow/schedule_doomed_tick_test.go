package flow_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// expiring is a job type whose defaults give it a fixed deadline, which
// a schedule's Opts may not, but its kind's Defaults may.
type expiring struct{ Team string }

func (expiring) Kind() string { return "expiring" }

func (expiring) Defaults() []flow.EnqueueOption {
	return []flow.EnqueueOption{flow.WithDeadline(at(30 * time.Minute))}
}

// TestTickPastItsDeadlineIsRefusedNotRetried: a schedule whose jobs'
// WithDelay makes them due at or after their deadline (a fixed one, from
// their kind's Defaults, that has come close) has each tick's job refused
// by the store (ErrInvalid): bad input, that tick's alone. The scheduler logs it and
// confirms the tick, as it does a tick whose job corrupt data keeps out;
// it does not fail the round and send the tick again at every round for
// ever.
func TestTickPastItsDeadlineIsRefusedNotRetried(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	testkit.Must(t, flow.Register(e.reg, func(context.Context, *flow.Job[expiring]) error { return nil }))
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: expiring{Team: "a"},
		Opts: []flow.EnqueueOption{flow.WithDelay(time.Hour)}}
	var logs bytes.Buffer
	s, err := flow.NewScheduler(e.client(), flow.SchedulerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	testkit.Must(t, err)
	testkit.Must(t, s.Add(sc))
	if err := flow.EnqueueTicks(s, "m", at(0)); err != nil {
		t.Fatalf("a tick whose job is refused as bad input: %v, want it logged and confirmed", err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "due time") {
		t.Errorf("the refused tick was not logged with why:\n%s", logs.String())
	}
	if got := e.queued(); len(got) != 0 {
		t.Errorf("jobs %v added for a tick refused", got)
	}
}
