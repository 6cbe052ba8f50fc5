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

// nsUser makes a Redis ACL user confined, for pub/sub, to the channels of
// the namespace (ns:*: its wake channels, ns:wake:<queue>), and returns
// a client logged in as it.
func nsUser(t *testing.T, e *env) *redis.Client {
	t.Helper()
	ctx := context.Background()
	user := "hunt-" + e.NS
	testkit.Must(t, e.RDB.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "&"+e.NS+":*", "+@all").Err())
	t.Cleanup(func() { e.RDB.Do(context.Background(), "ACL", "DELUSER", user) })
	addr := e.RDB.(*redis.Client).Options().Addr
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: "pw"})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHuntPushProducerConfinedToNamespaceChannels: a producer whose Redis
// user may publish on its namespace's channels (its enqueues publish the
// wake-ups, ns:wake:<queue>) enqueues a plain job while an idle worker's
// offer stands: the enqueue publishes on the worker's push channel,
// sluice-push:<hex>, outside the namespace, and Redis refuses the PUBLISH
// inside the script: the enqueue fails (after its writes: a payload's
// body key is written before the push). Without the offer it succeeds.
func TestHuntPushProducerConfinedToNamespaceChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := nsUser(t, e)
	producer, err := flow.NewClient(c, flow.ClientOptions{Namespace: e.NS})
	testkit.Must(t, err)
	ran := testkit.Chan[string]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- job.ID
		return nil
	}))
	w := e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	e.Sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	res, err := producer.Enqueue(context.Background(), workArgs{N: 1})
	if err != nil {
		t.Fatalf("enqueue by a producer confined to the namespace's channels: %v", err)
	}
	if got := testkit.Recv(t, ran, "the job to run"); got != res.ID {
		t.Fatalf("ran %s, want %s", got, res.ID)
	}
}

// TestHuntPushWorkerConfinedToNamespaceChannels: a worker whose Redis user
// may subscribe to its namespace's channels (the wake channels,
// ns:wake:<queue>) no longer starts: its one SUBSCRIBE names the push
// channel, sluice-push:<hex>, outside the namespace, and is refused.
func TestHuntPushWorkerConfinedToNamespaceChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := nsUser(t, e)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	w, err := runtime.NewWorker(c, reg, runtime.Options{Namespace: e.NS, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	testkit.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case err := <-done:
		cancel()
		t.Fatalf("worker confined to its namespace's channels: Run returned at once: %v", err)
	case <-time.After(2 * time.Second):
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
