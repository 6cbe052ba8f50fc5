package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTriggerAfterResizeUsesTheRecordedCount: operator calls read a
// queue's layout on every call (docs/operations.md, "Queue layouts":
// "operator calls read it on every call"), since a long-lived operator's
// process (the console, a program on admin.Client) must see a resize at
// once. After the queue grew from 2 to 4 partitions, the trigger of a
// schedule keyed by a partition key, from a client that read the layout
// before the resize, lands where the schedule's ticks (and every other
// job of the key) now go, not on the partition the key had under 2
// partitions, which would break the key's order (and, for a unique
// schedule, its uniqueness).
func TestTriggerAfterResizeUsesTheRecordedCount(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	newClient := func() *flow.Client {
		c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	app := newClient()
	if _, err := app.Enqueue(ctx, email{To: "x"}, flow.WithQueue("reports")); err != nil { // registers 1 partition
		t.Fatal(err)
	}
	other := admin.New(newClient())
	testkit.Must(t, other.PauseQueue(ctx, "reports"))
	testkit.Must(t, other.ResizeQueue(ctx, "reports", 2))

	// the long-lived operator's client (a console) reads the layout: 2
	ops := admin.New(newClient())
	if _, err := ops.QueueStats(ctx, "reports", 0); err != nil {
		t.Fatal(err)
	}
	// another operator grows the queue; producers and schedulers restart
	testkit.Must(t, other.ResizeQueue(ctx, "reports", 4))
	fresh := newClient()
	key, want := "", -1
	for i := range 64 {
		k := fmt.Sprint("customer-", i)
		e, err := fresh.Enqueue(ctx, email{To: k}, flow.WithQueue("reports"), flow.WithPartitionKey(k))
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := keys.ParseRef(ns, e.ID)
		if ref.Index >= 2 { // a partition the queue did not have before
			key, want = k, ref.Index
			break
		}
	}
	if key == "" {
		t.Fatal("no key placed on partitions 2 or 3")
	}
	sch, err := flow.NewScheduler(fresh, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(t, err)
	testkit.Must(t, sch.Add(flow.Schedule{Name: "per-customer", Every: 24 * time.Hour, Args: email{To: key},
		Opts: []flow.EnqueueOption{flow.WithQueue("reports"), flow.WithPartitionKey(key)}}))
	sctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- sch.Run(sctx) }()
	t.Cleanup(func() { stop(); <-ran })
	redistest.Within(t, testkit.Timeout, "the schedule to be published", func() (bool, string) {
		_, err := ops.Schedule(ctx, "per-customer")
		return err == nil, fmt.Sprint(err)
	})

	e, err := ops.TriggerSchedule(ctx, "per-customer")
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := keys.ParseRef(ns, e.ID)
	if ref.Index != want {
		t.Fatalf("TriggerSchedule after the queue grew to 4 partitions: job %s on partition %d; the key %q goes to partition %d "+
			"under the layout Redis records (the trigger used the 2 partitions its client read before the resize)",
			strings.TrimSpace(e.ID), ref.Index, key, want)
	}
}
