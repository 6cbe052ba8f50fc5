package flow_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

type longNameWaiter struct{}

func (longNameWaiter) Kind() string { return "long_name_waiter" }

// TestWaitSignalLongName: a signal/step name of 100 characters is
// valid (Client.Signal takes it; step names allow 100), but
// step.WaitSignal with a timeout names its timer name+".timeout", 108
// characters, over MaxWaitName: the job is archived (invalid_wait) at its
// first run instead of waiting.
func TestWaitSignalLongName(t *testing.T) {
	rdb := realRedis(t)
	reg := flow.NewRegistry()
	name := strings.Repeat("w", 100)
	errs := make(chan error, 10)
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[longNameWaiter]) error {
		_, _, err := step.WaitSignal[string](ctx, name, time.Hour)
		errs <- err
		return err
	})
	c, ns := newClient(t, rdb, reg)
	ctx := context.Background()
	res, err := c.Enqueue(ctx, longNameWaiter{})
	if err != nil {
		t.Fatal(err)
	}
	testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	waitErr := testkit.Recv(t, errs, "the wait")
	var j *flow.JobInfo
	for range 200 { // until the attempt is settled
		if j, err = c.Job(ctx, res.ID); err != nil {
			t.Fatal(err)
		}
		if j.State != flow.StateRunning && j.State != flow.StateAvailable {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if j.State != flow.StateScheduled || !j.Suspended {
		t.Fatalf("WaitSignal(%d-char name, 1h) returned %v; the job is %s (%s: %s), want scheduled, suspended, waiting for the signal",
			len(name), waitErr, j.State, j.Reason, j.LastError)
	}
}
