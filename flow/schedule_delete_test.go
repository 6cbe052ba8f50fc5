package flow_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestDeleteScheduleRefusedWhileASchedulerRunsItForcedStartsAfresh: an
// operator's DeleteSchedule of a schedule a scheduler runs is refused
// with ErrScheduleRunning, changing nothing (the scheduler would publish
// it again at its next round). Forced, it is deleted, and that scheduler's
// next round publishes it again and starts it afresh from that round,
// with no error (its next tick the first after it); the job a tick
// enqueued before the delete is left alone. Once no scheduler runs it for
// ScheduleRunningWithin, it is deleted without force.
func TestDeleteScheduleRefusedWhileASchedulerRunsItForcedStartsAfresh(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	ops := admin.New(e.client())
	s := e.newScheduler(flow.Schedule{Name: "nightly", Cron: "* * * * *", Args: report{}})
	stop := e.run(s)
	e.wait("nightly", 1)
	e.clk.Advance(time.Minute)
	e.wait("nightly", 1) // the tick at 1m enqueued

	err := ops.DeleteSchedule(ctx, "nightly", admin.DeleteScheduleOptions{})
	if !errors.Is(err, admin.ErrScheduleRunning) {
		t.Fatalf("DeleteSchedule of a schedule a scheduler runs: %v; want ErrScheduleRunning", err)
	}
	if _, err := ops.Schedule(ctx, "nightly"); err != nil {
		t.Fatalf("the refused delete deleted it: %v", err)
	}

	if err := ops.DeleteSchedule(ctx, "nightly", admin.DeleteScheduleOptions{Force: true}); err != nil {
		t.Fatalf("forced DeleteSchedule: %v", err)
	}
	if ss, err := ops.Schedules(ctx); err != nil || len(ss) != 0 {
		t.Fatalf("Schedules after the forced delete: %v, %v; want none", ss, err)
	}
	// the scheduler's next round starts it afresh, at 2m: no error (wait
	// fails on a round that ended with one)
	e.clk.Advance(time.Minute)
	e.wait("nightly", 1)
	info, err := ops.Schedule(ctx, "nightly")
	if err != nil || !info.LastRun.IsZero() || !info.NextRun.Equal(at(3*time.Minute)) {
		t.Fatalf("after the scheduler's round: %+v, %v; want it published again, no run yet, next at 3m", info, err)
	}
	e.clk.Advance(time.Minute)
	e.wait("nightly", 1)
	stop()
	want := tickIDs("nightly", minutes(1, 3)...)
	if diff := cmp.Diff(want, e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}

	// stopped (removed from the code): deleted without force once
	// ScheduleRunningWithin passed since its last sync
	e.clk.Advance(admin.ScheduleRunningWithin - time.Millisecond)
	if err := ops.DeleteSchedule(ctx, "nightly", admin.DeleteScheduleOptions{}); !errors.Is(err, admin.ErrScheduleRunning) {
		t.Fatalf("DeleteSchedule just before ScheduleRunningWithin passed: %v; want ErrScheduleRunning", err)
	}
	e.clk.Advance(time.Millisecond)
	if err := ops.DeleteSchedule(ctx, "nightly", admin.DeleteScheduleOptions{}); err != nil {
		t.Fatalf("DeleteSchedule of a schedule no scheduler runs: %v", err)
	}
	if _, err := ops.Schedule(ctx, "nightly"); !errors.Is(err, flow.ErrScheduleNotFound) {
		t.Fatalf("Schedule after the delete: %v; want ErrScheduleNotFound", err)
	}
	if got := e.queued(); !slices.Equal(got, want) {
		t.Fatalf("the delete touched the jobs its ticks enqueued: %v; want %v", got, want)
	}
}
