package flow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

type relayParent struct{}

func (relayParent) Kind() string { return "relay-parent" }

type relayKid struct{}

func (relayKid) Kind() string { return "relay-kid" }

// TestJoinRecheckRelaysChildrenOutboxes: a child in a queue served by
// workers of its own finishes, its end written to its partition's outbox
// for its parent in another queue, and its worker is killed before any
// relay ran (no final relay), the children's workers scaled to none. Only
// workers serving the child's partition relayed its outbox: the parent,
// run again at its Join's recheck (RunNow stands for it), read only its
// own records and waited again, for ever. The parent's worker relays the
// outboxes of the children it still waits for instead, and completes; an
// entry there that cannot be relayed is dead-lettered and reported
// (OnDeadEffect) as by the relay loop.
func TestJoinRecheckRelaysChildrenOutboxes(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[relayKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[relayParent]) error { return joinKid(ctx, relayKid{}) }))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	adm := admin.New(c)
	dead := make(chan sluicetype.DeadEffect, 4)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2, // the default queue only
		OnDeadEffect: func(_ context.Context, d sluicetype.DeadEffect) { dead <- d }}, nil)
	e, err := c.Enqueue(ctx, relayParent{})
	testkit.Must(t, err)
	testkit.PollJob(t, c, e.ID, "to wait", func(j *flow.JobInfo) bool { return j.WaitingFor != "" })

	// the child's worker: claims it, acks it, and dies before its relay
	kp := keys.Partition{NS: ns, Queue: "kids"}
	st := store.New(rdb, store.Config{NS: ns, RetainArchived: time.Hour, CrashLimit: 3})
	cl, err := st.Claim(ctx, kp, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "kw", Nonce: "n"})
	if err != nil || len(cl.Jobs) != 1 {
		t.Fatalf("claim of the child: %+v, %v", cl, err)
	}
	j := cl.Jobs[0]
	res, outboxed, err := st.Ack(ctx, kp, []store.Ack{{Code: store.CodeOK,
		Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}}})
	if err != nil || res[0].Err != nil || outboxed != 1 {
		t.Fatalf("ack of the child: %+v, %d outboxed, %v", res, outboxed, err)
	}

	// and an entry no relay can read
	bad, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: kp.Outbox(), Values: []string{"t", "zz"}}).Result()
	testkit.Must(t, err)

	testkit.Must(t, adm.RunNow(ctx, e.ID)) // as at JoinRecheck
	testkit.PollJob(t, c, e.ID, "to complete", func(j *flow.JobInfo) bool { return j.State == flow.StateCompleted })
	if n, err := rdb.XLen(ctx, kp.Outbox()).Result(); err != nil || n != 0 {
		t.Errorf("the child's outbox holds %d entries (%v), want 0: its end relayed and deleted", n, err)
	}
	if d := testkit.Recv(t, dead, "the bad entry reported"); d.Error != "unknown outbox entry" || !strings.HasPrefix(d.ID, "kids:0:") {
		t.Errorf("dead effect reported: %+v, want kids' entry %s, unknown", d, bad)
	}
}

type snoozedSpawner struct{}

func (snoozedSpawner) Kind() string { return "snoozed-spawner" }

// TestJoinOnItsSpawningRunRelaysNothing: a parent whose Spawn runs on an
// attempt past its first (here a snooze before it; a retry, a workflow
// resumed after a Sleep or a signal alike) joins children it has just
// spawned. None can have ended yet, and Join must cost no round trip
// more (its doc, the changelog): it relayed the outboxes of all their
// partitions in the handler, every entry in them (here one no relay can
// read, dead-lettered by the parent's worker, which serves no partition
// of the children's queue).
func TestJoinOnItsSpawningRunRelaysNothing(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[relayKid]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[snoozedSpawner]) error {
		if job.Fence <= 1 {
			return flow.Snooze(time.Millisecond)
		}
		return joinKid(ctx, relayKid{})
	}))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	kp := keys.Partition{NS: ns, Queue: "kids"}
	_, err = rdb.XAdd(ctx, &redis.XAddArgs{Stream: kp.Outbox(), Values: []string{"t", "zz"}}).Result()
	testkit.Must(t, err)
	dead := make(chan sluicetype.DeadEffect, 4)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2, // the default queue only
		OnDeadEffect: func(_ context.Context, d sluicetype.DeadEffect) { dead <- d }}, nil)
	e, err := c.Enqueue(ctx, snoozedSpawner{})
	testkit.Must(t, err)
	testkit.PollJob(t, c, e.ID, "to wait", func(j *flow.JobInfo) bool { return j.WaitingFor != "" })
	if n, err := rdb.XLen(ctx, kp.Outbox()).Result(); err != nil || n != 1 {
		t.Errorf("the children's outbox holds %d entries (%v), want 1: relayed on the run that spawned them", n, err)
	}
	select {
	case d := <-dead:
		t.Errorf("dead effect reported by the parent's worker: %+v: it relayed the children's outbox on the run that spawned them", d)
	default:
	}
}
