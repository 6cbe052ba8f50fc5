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

// TestStalledTickWhoseArgsWereReplacedIsNoConflict: a scheduler claims
// tick 1 and stalls past abandonAfter (not past claimFresh); another takes
// the abandoned tick and enqueues its job, which holds the schedule's
// unique key (OnDuplicate "replace"). A producer then enqueues a job under
// the same unique key: the pending tick job's arguments are replaced, as
// "replace" is meant to. The stalled scheduler resumes and enqueues tick 1
// again: enqueue.lua meets the tick's job, compares its (replaced) payload
// and answers "conflict", though the tick's marker proves this very tick
// was enqueued. The scheduler must take it as the tick already enqueued,
// not log that the tick's ID is taken by another job.
func TestStalledTickWhoseArgsWereReplacedIsNoConflict(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	uq := flow.WithUnique("m-report", 0, flow.ReplaceArgs)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{Team: "a"}, Opts: []flow.EnqueueOption{uq}}
	_, claimed := claimTickOne(t, e, sc)
	var logs bytes.Buffer
	stalled, err := flow.NewScheduler(e.client(), flow.SchedulerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	testkit.Must(t, err)
	testkit.Must(t, stalled.Add(sc))
	e.clk.Advance(time.Minute) // the claim is abandoned
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	local := tickIDs("m", minutes(1)...)[0]
	// another producer's job with the schedule's unique key replaces the
	// pending tick job's arguments
	res, err := e.client().Enqueue(ctx, report{Team: "b"}, uq)
	if err != nil || !res.Duplicate || res.ID != "default:0:"+local {
		t.Fatalf("replace: %+v %v; want a duplicate of tick 1's job %s", res, err, local)
	}
	if err := flow.EnqueueClaimedTicks(stalled, "m", claimed, at(time.Minute)); err != nil { // it resumes
		t.Fatalf("the stalled scheduler's enqueue: %v", err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the stalled scheduler logged an error for a tick enqueued once already:\n%s", logs.String())
	}
	if got := e.queued(); len(got) != 1 || got[0] != local {
		t.Errorf("jobs after the stalled scheduler resumed: %v, want tick 1's alone", got)
	}
}
