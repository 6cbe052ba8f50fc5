package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestResentOfferingClaimAfterAListing: a dry claim that made an offer
// is recorded (a second run would make it again), and its reply is lost;
// before it is sent again, a job with an option is listed (its wake
// deletes the offer) and its wake-up reaches the worker. The re-send,
// answered from the record, says to claim again at once (the idle flag is
// gone), and the worker, whose idle poll is an hour away, runs the job.
// Found by a review: the record's "dry" un-readied the partition the
// wake-up had readied, and the job waited for IdlePoll.
func TestResentOfferingClaimAfterAListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	listed := make(chan string, 1)
	e.RDB.AddHook(&testkit.LoseFirstReply{Script: lua.Claim, Meanwhile: func() {
		// a job with an option is listed, not pushed: its wake-up deletes
		// the offer; the fault's window lets the wake-up reach the
		// worker's channel before the lost claim is answered
		listed <- e.Enqueue(lostClaimArgs{}, flow.WithPriority(2))
		time.Sleep(200 * time.Millisecond)
	}})
	e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour, Concurrency: 4})
	jid := testkit.Recv(t, listed, "a claim's reply lost and a job listed")
	e.WaitState(jid, flow.StateCompleted)
}
