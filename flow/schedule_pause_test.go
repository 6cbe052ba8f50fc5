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

// TestMissedPolicyAcrossPauses: a minutely schedule, no scheduler
// running from 0:30 to 7:45 (one outage), with two pauses in it: paused
// 3:30..4:30 and 6:45..7:45. The ticks missed while not paused are 1, 2,
// 3, 5, 6 (ticks 4 and 7 fell while paused: not run). RunOnce enqueues
// one job for all the missed ticks (the most recent: 6) and CatchUp(2)
// the most recent two (5, 6), as for an outage without pauses. A helper's
// audit found each pause's window of owed ticks decided apart, with the
// policy applied per window: RunOnce enqueued 3 and 6, CatchUp(2) 2, 3,
// 5 and 6.
func TestMissedPolicyAcrossPauses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		policy flow.MissedPolicy
		want   []int
	}{
		{"once", flow.RunOnce, []int{6, 8}},
		{"catch up 2", flow.CatchUp(2), []int{5, 6, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSchedEnv(t)
			ctx := context.Background()
			ad := admin.New(e.client())
			sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}, Missed: tc.policy}
			stop := e.run(e.newScheduler(sc))
			e.wait("m", 1) // state starts at t0
			stop()
			step := func(d time.Duration) { e.clk.Advance(d) }
			step(3*time.Minute + 30*time.Second) // 3:30: ticks 1-3 due, undecided
			testkit.Must(t, ad.PauseSchedule(ctx, "m"))
			step(time.Minute) // 4:30: tick 4 paused
			testkit.Must(t, ad.ResumeSchedule(ctx, "m"))
			step(2*time.Minute + 15*time.Second) // 6:45: ticks 5, 6 due, undecided
			testkit.Must(t, ad.PauseSchedule(ctx, "m"))
			step(time.Minute) // 7:45: tick 7 paused
			testkit.Must(t, ad.ResumeSchedule(ctx, "m"))
			e.run(e.newScheduler(sc))
			e.wait("m", 1)
			step(15 * time.Second) // 8:00, on time
			e.wait("m", 1)
			if diff := cmp.Diff(tickIDs("m", minutes(tc.want...)...), e.queued()); diff != "" {
				t.Fatalf("jobs (-want +got):\n%s", diff)
			}
		})
	}
}
