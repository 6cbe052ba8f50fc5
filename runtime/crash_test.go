package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
)

// Crash tests with real processes: the test binary re-executes itself as a
// worker process (TestMain sees envChild), whose handler announces the job
// it claimed and then blocks forever; the parent SIGKILLs it.

const (
	envChild     = "SLUICE_RUNTIME_TEST_CHILD" // set: run childMain
	envChildAddr = "SLUICE_RUNTIME_TEST_CHILD_ADDR"
	envChildNS   = "SLUICE_RUNTIME_TEST_CHILD_NS"
	childLease   = 30 * time.Second
)

// crashArgs is the job the child process claims and never finishes.
type crashArgs struct{ N int }

func (crashArgs) Kind() string { return "crash_victim" }

// childMain is the worker process: real clock, Lease 30s, one job at a
// time. It prints "worker <id>", then "claimed <job id>" for the job it
// claims, whose handler then blocks forever.
func childMain() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envChildAddr)})
	reg := flow.NewRegistry()
	err := flow.Register(reg, func(ctx context.Context, job *flow.Job[crashArgs]) error {
		fmt.Printf("claimed %s\n", job.ID)
		select {} // until SIGKILL
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace:   os.Getenv(envChildNS),
		Lease:       childLease,
		Concurrency: 1,
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Printf("worker %s\n", w.ID())
	err = w.Run(context.Background())
	fmt.Fprintln(os.Stderr, "child: Run returned", err)
	return 2
}

// child is a worker process started by startChild.
type child struct {
	cmd    *exec.Cmd
	out    *proctest.LineLog
	stderr *proctest.Buffer
	id     string // its worker ID
	killed bool
}

// startChild starts a worker process on namespace ns and waits until it
// reports its worker ID.
func startChild(t *testing.T, ns string) *child {
	t.Helper()
	c := &child{out: &proctest.LineLog{}, stderr: &proctest.Buffer{}}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), envChild+"=1", envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+ns)
	c.cmd.Stdout = c.out
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.killed {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("child %d stderr:\n%s", c.cmd.Process.Pid, c.stderr.String())
		}
	})
	c.id = strings.TrimPrefix(c.waitLine(t, "worker "), "worker ")
	if !strings.Contains(c.id, ":"+strconv.Itoa(c.cmd.Process.Pid)+":") {
		t.Errorf("child worker ID %q does not name its pid %d", c.id, c.cmd.Process.Pid)
	}
	return c
}

func (c *child) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	line, ok := c.out.Wait(prefix, waitTimeout)
	if !ok {
		t.Fatalf("child did not print %q; stdout:\n%s\nstderr:\n%s", prefix, c.out.String(), c.stderr.String())
	}
	return line
}

// kill SIGKILLs the process and reaps it.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	c.killed = true
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", c.cmd.ProcessState)
	}
}

// TestKilledProcessJobIsReapedBehindWaitingWork kills a worker process
// while it holds a job, then lets another worker (its clock past the
// lease) reap and finish it: the crash is charged to crash_attempt, not
// attempt, the job records who lost it, and it runs after the work that
// was already waiting.
func TestKilledProcessJobIsReapedBehindWaitingWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	victim := e.Enqueue(crashArgs{N: 0})
	spawned := time.Now()
	c := startChild(t, e.NS)
	c.waitLine(t, "claimed "+victim)
	checkSummary(t, "victim while the child holds it", e.Job(victim),
		summary{State: flow.StateRunning, Fence: 1, Holder: c.id})
	c.kill(t)
	killed := time.Now()

	// Healthy work that is already waiting when the victim is reaped.
	waiting := []string{e.Enqueue(crashArgs{N: 1}), e.Enqueue(crashArgs{N: 2})}
	if got := e.Job(victim).State; got != flow.StateRunning {
		t.Fatalf("victim is %s before any reaping, want running", got)
	}

	type run struct {
		id      string
		attempt int
		crashes int
		orphan  sluicetype.Orphan
		fence   int64
	}
	runs := testkit.Chan[run]()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[crashArgs]) error {
		runs <- run{job.ID, job.Attempt, job.CrashAttempt, job.Orphan, job.Fence}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const maint = 2 * time.Second
	clk := newTestClock(time.UnixMilli(time.Now().Add(childLease + time.Second).UnixMilli()))
	w := e.startWorker(reg, runtime.Options{
		Clock: clk, Concurrency: 1, MaintenanceInterval: maint, IdlePoll: time.Hour,
	})
	// the first maintenance pass (which reaps) is done
	e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 1 })
	clk.Advance(maint) // and one more, for good measure

	var order []string
	var victimRun run
	for range 3 {
		r := testkit.Recv(t, runs, "a job to run")
		order = append(order, r.id)
		if r.id == victim {
			victimRun = r
		} else if r.attempt != 0 || r.crashes != 0 || r.orphan != (sluicetype.Orphan{}) {
			t.Errorf("healthy job %s ran with %+v", r.id, r)
		}
	}
	want := append(append([]string(nil), waiting...), victim)
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("run order %v, want the reaped job behind the waiting ones: %v", order, want)
	}
	if victimRun.attempt != 0 || victimRun.crashes != 1 || victimRun.fence != 2 {
		t.Errorf("reaped job ran with attempt %d crash_attempt %d fence %d, want 0, 1, 2",
			victimRun.attempt, victimRun.crashes, victimRun.fence)
	}
	if victimRun.orphan.Holder != c.id || victimRun.orphan.Count != 1 {
		t.Errorf("reaped job's handler saw orphan %+v, want holder %s count 1", victimRun.orphan, c.id)
	}

	j := e.WaitState(victim, flow.StateCompleted)
	checkSummary(t, "victim after completion", j, summary{
		State: flow.StateCompleted, CrashAttempt: 1, Fence: 2, OrphanHolder: c.id, OrphanCount: 1,
	})
	// The orphan's lease expired 30s after the child claimed it.
	lo, hi := spawned.Add(childLease).Add(-time.Second), killed.Add(childLease).Add(time.Second)
	if exp := j.Orphan.ExpiredAt; exp.Before(lo) || exp.After(hi) {
		t.Errorf("orphan ExpiredAt %v, want between %v and %v", exp, lo, hi)
	}
	if len(j.Errors) != 1 || j.Errors[0].Class != "lease_expired" || !strings.Contains(j.Errors[0].Message, c.id) {
		t.Errorf("errors %+v, want one lease_expired naming %s", j.Errors, c.id)
	}
	for _, id := range waiting {
		checkSummary(t, "waiting job "+id, e.WaitState(id, flow.StateCompleted),
			summary{State: flow.StateCompleted, Fence: 1})
	}
}

// TestProcessKillsQuarantineAtCrashLimit kills three worker processes in
// turn while they hold the same job; each loss is reaped, and the third
// reaches the crash limit (3): the job is quarantined without spending a
// single attempt.
func TestProcessKillsQuarantineAtCrashLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.Enqueue(crashArgs{N: 7})
	ref, _ := keys.ParseRef(e.NS, id)
	// The reaper is the worker's maintenance script run with a clock past
	// every lease; a Worker would claim the job again at once.
	st := store.New(e.RDB, store.Config{
		NS: e.NS, CrashLimit: 3, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour,
		Now: func() time.Time { return time.Now().Add(childLease + time.Second) },
	})
	prev := "" // the child killed in the previous round
	for round := 1; round <= 3; round++ {
		c := startChild(t, e.NS)
		c.waitLine(t, "claimed "+id)
		checkSummary(t, fmt.Sprintf("round %d: held by the child", round), e.Job(id), summary{
			State: flow.StateRunning, CrashAttempt: round - 1, Fence: int64(round), Holder: c.id,
			OrphanHolder: prev, OrphanCount: round - 1,
		})
		c.kill(t)
		prev = c.id
		m, err := st.Maintain(context.Background(), ref.Partition, 10, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		reaped := m.Reaped
		state := flow.StateAvailable
		if round == 3 {
			state = flow.StateQuarantined
		}
		if want := []store.Reaped{{Local: ref.Local, State: state, Holder: c.id}}; fmt.Sprint(reaped) != fmt.Sprint(want) {
			t.Fatalf("round %d: reaped %+v, want %+v", round, reaped, want)
		}
		want := summary{State: state, CrashAttempt: round, Fence: int64(round), OrphanHolder: c.id, OrphanCount: round}
		if round == 3 {
			want.Reason = "crash_limit"
		}
		checkSummary(t, fmt.Sprintf("round %d: after reaping", round), e.Job(id), want)
	}
	j := e.Job(id)
	if len(j.Errors) != 3 {
		t.Fatalf("errors %+v, want 3", j.Errors)
	}
	for i, r := range j.Errors {
		if r.Class != "lease_expired" || r.Attempt != 0 {
			t.Errorf("error %d: %+v, want class lease_expired at attempt 0", i, r)
		}
	}
}
