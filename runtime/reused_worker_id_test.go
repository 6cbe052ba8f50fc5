package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sticky"
)

// TestStoppedWorkerLeavesReusedIDRegistered: a worker ID reused by a new
// process (a rolling restart of a sticky worker, whose ID is stable by
// design) stays registered when the old process stops after the new one
// started. The old one's unregister deleted the new one's entry, so that
// until the new one's next heartbeat (a renewal round, seconds to
// minutes) sluice workers and the console left it out, and a sticky.Wait
// reroute to it was refused as "not live".
func TestStoppedWorkerLeavesReusedIDRegistered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	ops := admin.New(e.newClient(nil))
	reg := quickHandler(t)
	o := runtime.Options{WorkerID: "gpu-reused", Queues: map[string]int{"default": 1}}
	registered := func(after time.Time) time.Time {
		t.Helper()
		var started time.Time
		redistest.Eventually(t, "worker "+o.WorkerID+" registered, started after "+after.String(), func() bool {
			ws, _ := ops.Workers(ctx)
			for _, w := range ws {
				if w.ID == o.WorkerID && w.Started.After(after) {
					started = w.Started
					return true
				}
			}
			return false
		})
		return started
	}
	// each process on a clock of its own, the new one's a second later:
	// their start times differ with no sleep for the clock to move on
	start := fakeStart()
	o.Clock = newTestClock(start)
	old := e.startWorker(reg, o)
	oldStarted := registered(time.Time{})
	o.Clock = newTestClock(start.Add(time.Second))
	e.startWorker(reg, o)
	newStarted := registered(oldStarted)

	old.Cancel() // the old process shuts down, the new one runs on
	<-old.Done()

	ws, err := ops.Workers(ctx)
	found := false
	for _, w := range ws {
		found = found || w.ID == o.WorkerID && w.Started.Equal(newStarted)
	}
	if !found {
		t.Errorf("after the old process of %s stopped, the live new one (started %s) is not listed: %+v, %v",
			o.WorkerID, newStarted, ws, err)
	}
	id := e.Enqueue(workArgs{}, sticky.To("gpu-other", sticky.After(time.Hour)))
	if err := ops.Reroute(ctx, id, sticky.To(o.WorkerID, sticky.Wait())); err != nil {
		t.Errorf("reroute to the live worker %s refused: %v", o.WorkerID, err)
	}
}
