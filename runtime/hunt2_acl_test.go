package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// TestHunt2ProducerAllowedWakeChannelsOnly: a producer whose Redis user
// may publish only on the channels it published on before the change, its
// namespace's wake channels (&ns:wake:*), enqueues a plain job while an
// idle worker's offer stands. offer_open checks only the channel's prefix
// and its subscriber count; the enqueue leases the job to the worker
// (running, fence 1, run index) and its PUBLISH, refused by the ACL, is a
// pcall whose error is dropped (push_sent): the call succeeds, the worker
// never hears of the job, which waits out its whole lease and is then
// reaped and charged a crash it never had.
func TestHunt2ProducerAllowedWakeChannelsOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	user := "wakeonly-" + e.NS
	testkit.Must(t, e.RDB.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "&"+e.NS+":wake:*", "+@all").Err())
	t.Cleanup(func() { e.RDB.Do(context.Background(), "ACL", "DELUSER", user) })
	c := redis.NewClient(&redis.Options{Addr: e.RDB.(*redis.Client).Options().Addr, Username: user, Password: "pw"})
	t.Cleanup(func() { c.Close() })
	producer, err := flow.NewClient(c, flow.ClientOptions{Namespace: e.NS})
	testkit.Must(t, err)
	ran := testkit.Chan[string]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- job.ID
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: 200 * time.Millisecond, Lease: 4 * time.Second})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	res, err := producer.Enqueue(ctx, workArgs{N: 1})
	testkit.Must(t, err)
	select {
	case got := <-ran:
		if got != res.ID {
			t.Fatalf("ran %s, want %s", got, res.ID)
		}
	case <-time.After(2 * time.Second):
		j := e.Job(res.ID)
		t.Errorf("job not run 2s after its enqueue (state %s, fence %d): leased by the enqueue, its push refused by the ACL and dropped",
			j.State, j.Fence)
		got := testkit.Recv(t, ran, "the job to run after its lease")
		_ = got
		j = e.WaitState(res.ID, flow.StateCompleted)
		if j.CrashAttempt != 0 {
			t.Errorf("crash_attempt %d: charged a crash for a push the worker never got", j.CrashAttempt)
		}
	}
}
