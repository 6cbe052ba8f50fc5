package admin_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTriggerDoesNotRegisterALayout: a scheduler publishes its schedule
// when it starts but registers its queue only at its first tick. The
// application's processes are configured with 4 partitions for the queue
// ("reports"); no worker of it has started yet. An operator triggers the
// schedule (sluice schedules trigger, the console's Trigger) before its
// first tick: the operator's tool has no partition count of its own, and
// must not invent one. TriggerSchedule is refused with ErrQueueNotFound
// and registers nothing (registering the default, 1 partition, would make
// every producer and worker configured with 4 fail with ErrLayoutMismatch
// until the queue is resized by hand).
func TestTriggerDoesNotRegisterALayout(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	ns := redistest.NewNamespace(t)
	ctx := context.Background()
	// the application's client, as its scheduler and producers have it
	app, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"reports": 4}})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := flow.NewScheduler(app, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(t, err)
	testkit.Must(t, sch.Add(flow.Schedule{Name: "daily-report", Every: 24 * time.Hour, Args: email{To: "boss"},
		Opts: []flow.EnqueueOption{flow.WithQueue("reports")}}))
	sctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- sch.Run(sctx) }()
	t.Cleanup(func() { stop(); <-ran })

	// the operator's tool: a client with no Partitions, as the CLI and the console have
	opc, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ops := admin.New(opc)
	redistest.Within(t, testkit.Timeout, "the schedule to be published", func() (bool, string) {
		_, err := ops.Schedule(ctx, "daily-report")
		return err == nil, fmt.Sprint(err)
	})
	if qs, err := ops.Layouts(ctx); err != nil || len(qs) != 0 {
		t.Fatalf("before the trigger: queues %+v, %v; want none registered", qs, err)
	}

	e, err := ops.TriggerSchedule(ctx, "daily-report")
	qs, lerr := ops.Layouts(ctx)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(qs) > 0 {
		_, perr := app.Enqueue(ctx, email{To: "x"}, flow.WithQueue("reports"))
		t.Fatalf("TriggerSchedule (job %q, err %v) registered queue %q with %d partition(s), a count the operator's tool "+
			"assumed: the application's client configured with 4 now fails to enqueue: %v", e.ID, err, qs[0].Name, qs[0].Partitions, perr)
	}
	if !errors.Is(err, admin.ErrQueueNotFound) {
		t.Fatalf("TriggerSchedule of a schedule whose queue no client or worker has registered: %v, want ErrQueueNotFound", err)
	}
}
