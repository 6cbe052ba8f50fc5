package isolated_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// TestStoppedWorkerChildEndsWithLease: a worker process stopped (SIGSTOP)
// while an isolated child runs a job can kill nothing, and the reaper
// gives the job to another attempt once the lease is gone. The child
// hears no renewal of the lease from its stopped worker, and ends itself
// and its process group (a grandchild it started) when the lease it knows
// runs out: the job's next attempt, in another worker's child, runs
// alone.
func TestStoppedWorkerChildEndsWithLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const lease = 2 * time.Second
	worker := exec.Command(os.Args[0], workerArg, e.NS, lease.String())
	worker.Env = []string{envRedis + "=" + shared.Server.Addr(), "GORACE=atexit_sleep_ms=0"}
	var stderr proctest.Buffer
	worker.Stderr = &stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Signal(syscall.SIGCONT)
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker process stderr:\n%s", stderr.String())
		}
	})
	id := e.Enqueue(hangArgs{Key: e.key("pids")})
	pid1, gc1 := e.hung(e.key("pids"))
	t.Cleanup(func() { _ = syscall.Kill(-pid1, syscall.SIGKILL) })
	if err := worker.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	checkGroupGone(t, pid1, gc1) // by the lease's end, with no renewal heard of

	// The reaper takes the job back once the lease is gone in store time;
	// another worker runs it again, in a new child.
	ref, _ := keys.ParseRef(e.NS, id)
	st := store.New(e.RDB, store.Config{
		NS: e.NS, CrashLimit: 3, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour,
	})
	redistest.Within(t, waitTimeout, "the reaper to take the job back", func() (bool, string) {
		m, err := st.Maintain(context.Background(), ref.Partition, 10, 0, 0)
		return err == nil && len(m.Reaped) == 1, fmt.Sprintf("%+v %v", m, err)
	})
	e.startWorker(isolate(t, command(), isolated.Options{}, hangArgs{}.Kind()), runtime.Options{ShutdownWindow: 10 * time.Millisecond})
	if pid2, _ := e.hung(e.key("pids")); pid2 == pid1 {
		t.Fatalf("the job's next attempt runs in child %d, the stopped worker's", pid2)
	}
	if j := e.Job(id); j.Fence < 2 || j.CrashAttempt != 1 {
		t.Errorf("job: fence %d crash_attempt %d, want a second attempt after one crash", j.Fence, j.CrashAttempt)
	}
}

// TestRenewedLeaseKeepsChild: a worker that renews the lease tells its
// child each new end, so a child that runs past its first lease is not
// ended by its own watch (TestStoppedWorkerChildEndsWithLease): its job
// completes in that one attempt, no crash charged.
func TestRenewedLeaseKeepsChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const lease = 500 * time.Millisecond
	renewed := e.Sig.Renewed.Subscribe()
	defer renewed.Close()
	e.startWorker(isolate(t, command(), isolated.Options{}, fenceArgs{}.Kind()), runtime.Options{Lease: lease})
	key := e.key("renewed")
	id := e.Enqueue(fenceArgs{Key: key})
	e.pop(key + ":ready")
	start := time.Now()
	// the worker's renewal rounds (every lease/3 or so) until three
	// leases have passed
	for time.Since(start) < 3*lease {
		renewed.WaitFor(t, func(testsignal.Pass) bool { return true })
	}
	if err := e.RDB.RPush(context.Background(), key+":go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	j := e.WaitState(id, flow.StateCompleted)
	if j.Attempt != 0 || j.CrashAttempt != 0 || len(j.Errors) != 0 {
		t.Errorf("attempt %d crash_attempt %d errors %+v, want the first attempt's completion, nothing charged", j.Attempt, j.CrashAttempt, j.Errors)
	}
}
