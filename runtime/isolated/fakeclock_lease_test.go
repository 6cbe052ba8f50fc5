package isolated_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// TestFakeClockChildKeepsLease: a worker on a FakeClock (Options.Clock)
// that is not advanced holds its lease: by its clock no time passes. It
// tells its isolated child nothing of the lease (the child would count it
// in real time), so the child is not ended by its own watch: the attempt
// completes, no crash charged.
func TestFakeClockChildKeepsLease(t *testing.T) {
	t.Parallel()
	clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
	e := newEnv(t, clk)
	e.startWorker(isolate(t, command(), isolated.Options{}, fenceArgs{}.Kind()),
		runtime.Options{Clock: clk, Lease: 200 * time.Millisecond, IdlePoll: time.Hour})
	key := e.key("fake")
	id := e.Enqueue(fenceArgs{Key: key})
	e.pop(key + ":ready")
	// Fault timing: three leases of real time pass while the worker's
	// clock stands still
	time.Sleep(600 * time.Millisecond)
	if err := e.RDB.RPush(context.Background(), key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	j := e.WaitState(id, flow.StateCompleted)
	if j.State != flow.StateCompleted || j.CrashAttempt != 0 {
		t.Errorf("job %s attempt %d crash_attempt %d errors %+v: want completed in its first attempt, its lease never out by the worker's clock",
			j.State, j.Attempt, j.CrashAttempt, j.Errors)
	}
}
