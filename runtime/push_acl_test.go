package runtime_test

import (
	"context"
	"strings"
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
func nsUser(t *testing.T, e *env) *redis.Client { return channelUser(t, e, e.NS+":*") }

// channelUser makes a Redis ACL user that may use the channels matching
// pattern only, and returns a client logged in as it.
func channelUser(t *testing.T, e *env, pattern string) *redis.Client {
	t.Helper()
	ctx := context.Background()
	user := "confined-" + e.NS + "-" + strings.NewReplacer(":", "-", "*", "all").Replace(pattern)
	testkit.Must(t, e.RDB.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "resetchannels", "&"+pattern, "+@all").Err())
	t.Cleanup(func() { e.RDB.Do(context.Background(), "ACL", "DELUSER", user) })
	addr := e.RDB.(*redis.Client).Options().Addr
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: "pw"})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestProducerConfinedToNamespaceChannels: a producer whose Redis user
// may publish on its namespace's channels only (its enqueues publish the
// wake-ups, ns:wake:<queue>) enqueues a plain job while an idle worker's
// offer stands: the push goes on the worker's channel, which is the
// namespace's too (ns:push:<id>). Found by a review: on a channel outside
// it (sluice-push:<id>) Redis refused the PUBLISH inside the script and
// the enqueue failed, after its writes.
func TestProducerConfinedToNamespaceChannels(t *testing.T) {
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

// TestWorkerConfinedToNamespaceChannels: a worker whose Redis user may
// subscribe to its namespace's channels only starts and runs: its one
// SUBSCRIBE names the wake channels and its own push channel, all in the
// namespace (found by a review: a push channel outside it was refused,
// and Run failed).
func TestWorkerConfinedToNamespaceChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := nsUser(t, e)
	ran := testkit.Chan[string]()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error {
		ran <- job.ID
		return nil
	}))
	sig := testsignal.NewWorker()
	w := testkit.StartWorker(t, c, reg, runtime.Options{Namespace: e.NS, IdlePoll: time.Hour, MaintenanceInterval: time.Hour}, sig)
	// idle: subscribed, and its claim ran dry (an offer made)
	sig.Idle.WaitFor(t, func(i testsignal.Idle) bool { return i.Worker == w.ID() })
	id := e.Enqueue(workArgs{N: 1})
	if got := testkit.Recv(t, ran, "the job to run"); got != id {
		t.Fatalf("ran %s, want %s", got, id)
	}
	testkit.Must(t, w.Stop())
}
