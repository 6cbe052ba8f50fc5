package isolated_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// TestStoppedChildResumesWhileWorkerHoldsLease: a child stopped (SIGSTOP)
// for longer than the lease, while its worker keeps renewing it, has the
// worker's renewals waiting in its stdin when it is continued (SIGCONT).
// The lease is still held: the child must go on and the job complete in
// that attempt, with no crash charged. A child that acts on its own
// lease timer, which ran out while it was stopped, before it reads the
// renewals queued for it, kills itself and its job is charged a crash
// though nothing crashed and the lease was never lost.
func TestStoppedChildResumesWhileWorkerHoldsLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const lease = 500 * time.Millisecond
	renewed := e.Sig.Renewed.Subscribe()
	defer renewed.Close()
	e.startWorker(isolate(t, command(), isolated.Options{}, fenceArgs{}.Kind()), runtime.Options{Lease: lease})
	key := e.key("stopped-child")
	id := e.Enqueue(fenceArgs{Key: key})
	pid, err := strconv.Atoi(e.pop(key + ":ready"))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	start := time.Now()
	// the worker's renewal rounds until three leases have passed, the
	// child stopped all along
	for time.Since(start) < 3*lease {
		renewed.WaitFor(t, func(testsignal.Pass) bool { return true })
	}
	if err := e.RDB.RPush(context.Background(), key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	j, err := testkit.AwaitState(e.Client, e.Sig, id, flow.StateCompleted, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if j.Attempt != 0 || j.CrashAttempt != 0 || len(j.Errors) != 0 {
		t.Errorf("attempt %d crash_attempt %d errors %+v, want the first attempt's completion, nothing charged",
			j.Attempt, j.CrashAttempt, j.Errors)
	}
}
