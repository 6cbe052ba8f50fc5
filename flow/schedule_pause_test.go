package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestSchedulePauseKeepsTicksDueBefore: a tick due before a pause, which
// no scheduler had enqueued when the pause and its resume landed, is
// still enqueued (as a missed tick, by the schedule's policy); the ticks
// that fell while paused are not. Before, the resume restarted the
// schedule from its own time and the tick was lost.
func TestSchedulePauseKeepsTicksDueBefore(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}, Missed: flow.CatchUp(5)}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	e.clk.Advance(time.Minute + 30*time.Second) // tick 1 due, no scheduler running
	ad := admin.New(e.client())
	testkit.Must(t, ad.PauseSchedule(ctx, "m"))
	e.clk.Advance(2 * time.Minute) // ticks 2 and 3 fall while paused
	testkit.Must(t, ad.ResumeSchedule(ctx, "m"))
	e.run(e.newScheduler(sc))
	e.wait("m", 1)
	e.clk.Advance(30 * time.Second)
	e.wait("m", 1)
	if diff := cmp.Diff(tickIDs("m", minutes(1, 4)...), e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}
	info, err := ad.Schedule(ctx, "m")
	if err != nil || !info.LastRun.Equal(at(4*time.Minute)) {
		t.Fatalf("schedule: last run %v, %v; want %v", info.LastRun, err, at(4*time.Minute))
	}
}
