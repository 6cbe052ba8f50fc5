package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestStalledSchedulerLeavesItsTicks: a scheduler claims tick 1 and
// stalls (a stopped process, a starved one) for over a day while the
// fleet runs on: another takes the abandoned tick, its job runs and is
// deleted, and the tick's one-day marker expires. The stalled scheduler,
// resuming, must not enqueue tick 1 again: it holds its claim far longer
// than a scheduler may before another takes the ticks, and leaves them.
// A helper's audit found it enqueued the tick, whose job then ran twice.
func TestStalledSchedulerLeavesItsTicks(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stalled, claimed := claimTickOne(t, e, sc)
	e.clk.Advance(time.Minute) // the claim is abandoned
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	if diff := cmp.Diff(tickIDs("m", minutes(1, 2)...), e.queued()); diff != "" {
		t.Fatalf("jobs after the takeover (-want +got):\n%s", diff)
	}
	local := tickIDs("m", minutes(1)...)[0]
	testkit.Must(t, admin.New(e.client()).DeleteJob(ctx, "default:0:"+local)) // it ran; retention deleted it
	// a day later its marker is gone too (Redis's own expiry does
	// not follow the test's clock)
	testkit.Must(t, e.rdb.Del(ctx, keys.Partition{NS: e.ns, Queue: "default"}.FollowUp(local)).Err())
	e.clk.Advance(25 * time.Hour)
	testkit.Must(t, flow.EnqueueClaimedTicks(stalled, "m", claimed, at(time.Minute))) // it resumes
	if diff := cmp.Diff(tickIDs("m", minutes(2)...), e.queued()); diff != "" {
		t.Fatalf("jobs after the stalled scheduler resumed (-want +got):\n%s", diff)
	}
}

// TestFreshClaimEnqueued: ticks claimed a moment ago are enqueued.
func TestFreshClaimEnqueued(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	s, claimed := claimTickOne(t, e, sc)
	e.clk.Advance(14 * time.Second)
	testkit.Must(t, flow.EnqueueClaimedTicks(s, "m", claimed, at(time.Minute)))
	if diff := cmp.Diff(tickIDs("m", minutes(1)...), e.queued()); diff != "" {
		t.Fatalf("jobs (-want +got):\n%s", diff)
	}
}

// claimTickOne runs schedule sc (every minute, from t0) once, a minute on
// claims its tick 1 as a scheduler that then dies or stalls would, and
// returns a scheduler of sc that has not run (the stalled one, for
// EnqueueClaimedTicks) and when the claim was sent.
func claimTickOne(t *testing.T, e *schedEnv, sc flow.Schedule) (*flow.Scheduler, time.Time) {
	t.Helper()
	stop := e.run(e.newScheduler(sc))
	e.wait(sc.Name, 1)
	stop()
	e.clk.Advance(time.Minute)
	st := store.New(e.rdb, store.Config{NS: e.ns, Now: e.clk.Now})
	s := e.newScheduler(sc)
	claimed := e.clk.Now()
	res, err := st.ClaimTicks(context.Background(), sc.Name, at(0), at(time.Minute), []time.Time{at(time.Minute)})
	if err != nil || res != store.Claimed {
		t.Fatalf("claim: %q, %v", res, err)
	}
	return s, claimed
}
