package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestWaitReusedID: a job Wait waits for, deleted and its ID given to a
// new job while the waiter's connection was down (the delete's
// announcement lost), ends the wait with ErrNotFound once it reconnects,
// not with the new job's outcome and result: the caller waited for the
// job it enqueued, which is gone.
func TestWaitReusedID(t *testing.T) {
	t.Parallel()
	direct := realRedis(t)
	via, cut, reconnect := cuttableClient(t)
	c, ns := waitClient(t, via, nil, time.Hour)
	direct2, err := flow.NewClient(direct, flow.ClientOptions{Namespace: ns})
	testkit.Must(t, err)
	adm := admin.New(direct2)

	id := enqueueID(t, direct2, squareJob{N: 5}, flow.WithID("order-1"))
	out := waitAsync(context.Background(), c, id)
	awaitWatched(t, direct, ns, id)
	ref, _ := keys.ParseRef(ns, id)
	redistest.Eventually(t, "the subscription", func() bool { return numSub(t, direct, ref.DoneChannel()) == 1 })

	cut() // the waiter's connections cut: the delete's announcement is lost
	redistest.Eventually(t, "the subscription to be gone", func() bool { return numSub(t, direct, ref.DoneChannel()) == 0 })
	testkit.Must(t, adm.DeleteJob(context.Background(), id))
	if again := enqueueID(t, laterClient(t, direct, ns), squareJob{N: 9}, flow.WithID("order-1")); again != id {
		t.Fatalf("the new job's ID %s, want %s", again, id)
	}
	w := testkit.StartWorker(t, direct, squareRegistry(t), runtime.Options{Namespace: ns}, nil)
	testkit.WaitState(t, direct2, w.Sig, id, flow.StateCompleted)

	reconnect()
	o := testkit.Recv(t, out, "the Wait after reconnecting")
	if !errors.Is(o.err, flow.ErrNotFound) {
		var got int
		if o.info != nil {
			_ = o.info.DecodeResult(&got)
		}
		t.Fatalf("Wait of a job deleted and its ID reused: %v (the new job's result %d), want ErrNotFound", o.err, got)
	}
}

// TestWaitReusedIDPoll: the same, the new job not finishing: the wait
// ends with ErrNotFound at the next poll, not when the new job ends (an
// hour here) or never.
func TestWaitReusedIDPoll(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, ns := waitClient(t, rdb, nil, 20*time.Millisecond)
	adm := admin.New(c)
	id := enqueueID(t, c, squareJob{N: 5}, flow.WithID("order-2"))
	out := waitAsync(context.Background(), c, id)
	awaitWatched(t, rdb, ns, id)
	ref, _ := keys.ParseRef(ns, id)
	// the delete's announcement lost: the job's mark removed behind the
	// waiter's back, as TestWaitFallback does
	testkit.Must(t, rdb.HDel(context.Background(), ref.Job(ref.Local), keys.FieldWatched).Err())
	testkit.Must(t, rdb.SRem(context.Background(), ref.Watching(), ref.Local).Err())
	testkit.Must(t, adm.DeleteJob(context.Background(), id))
	enqueueID(t, laterClient(t, rdb, ns), squareJob{N: 9}, flow.WithID("order-2"), flow.WithDelay(time.Hour))
	if o := testkit.Recv(t, out, "the Wait"); !errors.Is(o.err, flow.ErrNotFound) {
		t.Fatalf("Wait of a job deleted and its ID reused: %+v %v, want ErrNotFound", o.info, o.err)
	}
}

// laterClient is a client of namespace ns whose store time is a second
// ahead: a job it enqueues under a reused ID has another creation time
// than the deleted one's, with no sleep for the clock to move on.
func laterClient(t *testing.T, rdb redis.UniversalClient, ns string) *flow.Client {
	t.Helper()
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Clock: runtime.NewFakeClock(time.Now().Add(time.Second))})
	testkit.Must(t, err)
	return c
}
