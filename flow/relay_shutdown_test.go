package flow_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

type shutParent struct{}

func (shutParent) Kind() string { return "shut-parent" }

type shutChild struct{}

func (shutChild) Kind() string { return "shut-child" }

// TestChildEndRelayedAtShutdown: a child in a queue only its own worker
// serves finishes while that worker shuts down. Its end is told to its
// parent, in another queue, through the child's partition's outbox, which
// only workers serving that partition relay: the parent must still learn
// of it, not wait until a worker serves the children's queue again.
func TestChildEndRelayedAtShutdown(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	reg := flow.NewRegistry()
	gate, started := make(chan struct{}), make(chan struct{}, 1)
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[shutChild]) error {
		started <- struct{}{}
		<-gate
		return nil
	}))
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[shutParent]) error { return joinKid(ctx, shutChild{}) }))
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	testkit.Must(t, err)
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2}, nil)
	kw := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Concurrency: 2, Queues: map[string]int{"kids": 1}, ShutdownWindow: 10 * time.Second}, nil)
	e, err := c.Enqueue(context.Background(), shutParent{})
	testkit.Must(t, err)
	testkit.Recv(t, started, "the child to start")
	kw.Cancel() // shutdown begins; the child finishes within its window
	time.Sleep(50 * time.Millisecond)
	close(gate)
	<-kw.Done()
	testkit.PollJob(t, c, e.ID, "to complete", func(j *flow.JobInfo) bool { return j.State == flow.StateCompleted })
}
