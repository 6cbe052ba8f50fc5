package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestProducerAllowedWakeChannelsOnly: a producer whose Redis user may
// publish on its namespace's wake channels only (&ns:wake:*) enqueues a
// plain job while an idle worker's offer stands. The push's PUBLISH is
// refused, so the job is listed instead (the script publishes before it
// writes a lease) and claimed: fence 1, no crash. Found by a review: the
// lease was written and the refused PUBLISH dropped, the job waited out
// its lease and was charged a crash it never had.
func TestProducerAllowedWakeChannelsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	producer, err := flow.NewClient(channelUser(t, e, e.NS+":wake:*"), flow.ClientOptions{Namespace: e.NS})
	testkit.Must(t, err)
	type run struct{ id, lease string }
	ran := testkit.Chan[run]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- run{job.ID, job.LeaseID}
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: 200 * time.Millisecond, Lease: 4 * time.Second})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	res, err := producer.Enqueue(ctx, workArgs{N: 1})
	testkit.Must(t, err)
	if got := testkit.Recv(t, ran, "the job to run"); got.id != res.ID || testkit.PushedLease(got.lease) {
		t.Fatalf("ran %+v; want %s, claimed (its push was refused)", got, res.ID)
	}
	checkSummary(t, res.ID, e.WaitState(res.ID, flow.StateCompleted), summary{State: flow.StateCompleted, Fence: 1})
}
