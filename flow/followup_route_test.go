package flow_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

func routeOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// TestFollowUpPlacedAgainByItsPartitionKey: a follow-up with a partition
// key and a unique key, committed for a partition that a shrink of its
// queue retired before it was relayed, is placed again where every
// producer places a job with that partition key, so that it meets the
// job a producer enqueued there since with the same unique key (a
// duplicate, not added). It was placed by its unique key instead, on
// another partition, where it was added: two jobs held one unique key.
func TestFollowUpPlacedAgainByItsPartitionKey(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	st := store.New(rdb, store.Config{NS: ns})
	const q = "furoute"
	// a partition key on a partition that goes away (of 4), and a unique
	// key that the new count (2) places on another partition than it
	var pk, uk string
	for i := 0; pk == ""; i++ {
		k := fmt.Sprint("pk", i)
		if routeOf(k, 4) >= 2 {
			pk = k
		}
	}
	for i := 0; uk == ""; i++ {
		k := fmt.Sprint("uk", i)
		if routeOf(k, 2) != routeOf(pk, 2) {
			uk = k
		}
	}
	opts := []flow.EnqueueOption{flow.WithQueue(q), flow.WithPartitionKey(pk), flow.WithUnique(uk, time.Hour, flow.KeepExisting)}

	// the parent commits the follow-up, placed by the count 4
	parent := st.Partition("furoute-parent", 0)
	if _, err := st.Enqueue(ctx, parent, []store.NewJob{{Local: "p", Kind: "email", Payload: []byte("x"), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	cl, err := st.Claim(ctx, parent, store.ClaimRequest{N: 1, Lease: 30 * time.Second, Worker: "w", Nonce: "n", PromoteLimit: 10})
	if err != nil || len(cl.Jobs) != 1 {
		t.Fatalf("claim: %+v %v", cl, err)
	}
	j := cl.Jobs[0]
	as := attempt.New(st, keys.Ref{Partition: parent, Local: "p"}, store.Lease{}, nil)
	as.Layouts = store.FixedLayouts(st, map[string]int{q: 4})
	fx, err := flow.FollowUp(attempt.With(ctx, as), email{To: "x"}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if fu, _ := store.DecodeFollowUp(fx); fu.Partition.Index < 2 {
		t.Fatalf("the follow-up was placed on partition %d, want 2 or 3", fu.Partition.Index)
	}
	res, _, err := st.Ack(ctx, parent, []store.Ack{{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence},
		Code: store.CodeOK, Commit: "p@1:#complete", Effects: []sluicetype.Effect{fx}}})
	if err != nil || res[0].State != "completed" {
		t.Fatalf("ack: %+v %v", res, err)
	}

	// the queue shrinks to 2 before the relay
	if _, _, err := st.RegisterLayout(ctx, q, 4); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 4; i++ {
		if err := st.Retire(ctx, st.Partition(q, i)); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.LockResize(ctx, q, "t", false); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, done, err := st.ResizeLayout(ctx, q, 1, 2, "t"); err != nil || !done {
		t.Fatal(done, err)
	}
	// a producer, on the new count, enqueues the same unique key
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, email{To: "x"}, opts...); err != nil {
		t.Fatal(err)
	}

	if r, err := st.RelayOutbox(ctx, parent, "", 10); err != nil || len(r.Dead) != 0 {
		t.Fatalf("relay: %+v %v", r, err)
	}
	var held []int
	for i := range 2 {
		if n, _ := rdb.Exists(ctx, st.Partition(q, i).Unique(uk)).Result(); n == 1 {
			held = append(held, i)
		}
	}
	if len(held) != 1 {
		t.Errorf("unique key %q held on partitions %v of %s, want one", uk, held, q)
	}
	var jobs int64
	for i := range 2 {
		n, _ := rdb.LLen(ctx, st.Partition(q, i).Available(0)).Result()
		jobs += n
	}
	t.Logf("%d available jobs", jobs)
}
