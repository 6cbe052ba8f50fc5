package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
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
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			ws, _ := ops.Workers(ctx)
			for _, w := range ws {
				if w.ID == o.WorkerID && w.Started.After(after) {
					return w.Started
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("worker %s never registered (started after %s)", o.WorkerID, after)
		return time.Time{}
	}
	old := e.startWorker(reg, o)
	oldStarted := registered(time.Time{})
	time.Sleep(5 * time.Millisecond) // the new process starts later
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
