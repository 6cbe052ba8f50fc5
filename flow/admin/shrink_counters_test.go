package admin_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestShrinkRefusedByIndexesWhenCountersAreGone: a shrink is refused
// while a partition that would go away holds a job in any index, even
// when the partition's per-state counters (keys.Partition.Stats) are gone
// or say it is empty (deleted by hand, damaged): the check reads the
// indexes themselves, names what they hold, and brings the partition
// back, paused; the layout is unchanged. Trusting the counters alone
// retired a partition whose jobs then sat where no worker reads.
func TestShrinkRefusedByIndexesWhenCountersAreGone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		opts  []flow.EnqueueOption
		claim bool       // claimed: running
		ack   *store.Ack // then acked with this
		says  string
	}{
		{name: "available", says: "avail:0 1"},
		{name: "available at priority 7", opts: []flow.EnqueueOption{flow.WithPriority(7)}, says: "avail:7 1"},
		{name: "scheduled", opts: []flow.EnqueueOption{flow.WithDelay(2 * time.Second)}, says: "sched 1"},
		{name: "scheduled far ahead", opts: []flow.EnqueueOption{flow.WithDelay(90 * 24 * time.Hour)}, says: "later 1"},
		{name: "running", claim: true, says: "run 1"},
		{name: "completed", claim: true, ack: &store.Ack{Code: store.CodeOK}, says: "completed 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := env.Client(t)
			a := newAdmin(t, rdb, map[string]int{"cq": 4})
			ctx := context.Background()
			p3 := keys.Partition{NS: a.ns, Queue: "cq", Index: 3}
			for i := 0; ; i++ {
				id := a.enqueue(email{To: "x"}, append([]flow.EnqueueOption{flow.WithQueue("cq"), flow.WithPartitionKey("k" + strconv.Itoa(i))}, tc.opts...)...)
				if strings.HasPrefix(id, "cq:3:") {
					break
				}
				ok(t, a.ops.DeleteJob(ctx, id))
			}
			if tc.claim {
				res, err := a.st.Claim(ctx, p3, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: "n"})
				if err != nil || len(res.Jobs) != 1 {
					t.Fatalf("claim: %+v, %v", res, err)
				}
				if tc.ack != nil {
					j := res.Jobs[0]
					ack := *tc.ack
					ack.Lease = store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
					if _, _, err := a.st.Ack(ctx, p3, []store.Ack{ack}); err != nil {
						t.Fatal(err)
					}
				}
			}
			ok(t, a.ops.PauseQueue(ctx, "cq"))
			ok(t, rdb.Del(ctx, p3.Stats()).Err()) // the counters are gone

			err := a.ops.ResizeQueue(ctx, "cq", 2)
			if !errors.Is(err, admin.ErrResizeRefused) || !strings.Contains(err.Error(), "partition 3") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("shrink over a job whose counters are gone: %v, want ErrResizeRefused naming partition 3 and %q", err, tc.says)
			}
			q, err := a.ops.Queue(ctx, "cq")
			if err != nil || q.Partitions != 4 || q.Version != 1 || q.Paused != 4 {
				t.Fatalf("after the refused shrink: %+v, %v; want 4 partitions, all paused, version 1", q, err)
			}
			if r, err := a.ops.RetiredPartitions(ctx, "cq"); err != nil || len(r) != 0 {
				t.Errorf("retired partitions after the refused shrink: %v, %v; want none", r, err)
			}
		})
	}
}

// TestShrinkIgnoresLaterEntriesOfDeletedJobs: a job scheduled far ahead
// and then deleted leaves its entry in its later bucket until the bucket
// comes due (lua/lib_ready.lua); that is no job held, and a shrink of
// the partition goes ahead rather than be refused for weeks.
func TestShrinkIgnoresLaterEntriesOfDeletedJobs(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"lq": 2})
	ctx := context.Background()
	p1 := keys.Partition{NS: a.ns, Queue: "lq", Index: 1}
	for i := 0; ; i++ {
		id := a.enqueue(email{To: "x"}, flow.WithQueue("lq"), flow.WithPartitionKey("k"+strconv.Itoa(i)), flow.WithDelay(90*24*time.Hour))
		ok(t, a.ops.DeleteJob(ctx, id))
		if strings.HasPrefix(id, "lq:1:") {
			break
		}
	}
	if n := rdb.ZCard(ctx, p1.Later()).Val(); n == 0 {
		t.Fatal("the deleted job left no later bucket: the test shows nothing")
	}
	ok(t, a.ops.PauseQueue(ctx, "lq"))
	ok(t, a.ops.ResizeQueue(ctx, "lq", 1))
	if q, err := a.ops.QueueLayout(ctx, "lq"); err != nil || q.Partitions != 1 {
		t.Fatalf("after the shrink: %+v, %v; want 1 partition", q, err)
	}
}
