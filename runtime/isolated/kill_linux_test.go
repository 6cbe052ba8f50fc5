package isolated_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// These tests look for leftover processes in /proc.

// TestTimeoutKillsProcessGroup: on timeout the child and the grandchild it
// started (in its process group) are killed, none of the group is left,
// and the job is retried like any timed-out attempt.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	clk := runtime.NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
	e := newEnv(t, clk)
	e.startWorker(isolate(t, command(), isolated.Options{}, hangArgs{}.Kind()), runtime.Options{Clock: clk, Lease: time.Hour, IdlePoll: time.Hour})
	id := e.Enqueue(hangArgs{Key: e.key("pids")}, flow.WithTimeout(time.Minute))
	pid, gc := e.hung(e.key("pids"))
	clk.Advance(time.Minute)

	j := e.WaitState(id, flow.StateRetryable)
	if j.Attempt != 1 || j.CrashAttempt != 0 || len(j.Errors) != 1 || j.Errors[0].Class != "timeout" {
		t.Errorf("attempt %d crash_attempt %d errors %+v, want one timeout", j.Attempt, j.CrashAttempt, j.Errors)
	}
	checkGroupGone(t, pid, gc)
}

// TestShutdownKillsChild: a worker shutting down kills the children still
// running at the end of its window and hands their jobs back unspent.
func TestShutdownKillsChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	stop := e.startWorker(isolate(t, command(), isolated.Options{}, hangArgs{}.Kind()),
		runtime.Options{ShutdownWindow: 10 * time.Millisecond})
	id := e.Enqueue(hangArgs{Key: e.key("pids")})
	pid, gc := e.hung(e.key("pids"))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	j := e.WaitState(id, flow.StateAvailable)
	if j.Attempt != 0 || j.CrashAttempt != 0 || len(j.Errors) != 0 {
		t.Errorf("attempt %d crash_attempt %d errors %+v, want nothing spent", j.Attempt, j.CrashAttempt, j.Errors)
	}
	checkGroupGone(t, pid, gc)
}

// TestWorkerDeathKillsChildren: when the worker process dies, its child
// sees its stdin end and kills its process group: no orphan is left.
func TestWorkerDeathKillsChildren(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	worker := exec.Command(os.Args[0], workerArg, e.NS)
	worker.Env = []string{envRedis + "=" + shared.Server.Addr(), "GORACE=atexit_sleep_ms=0"}
	var stderr proctest.Buffer
	worker.Stderr = &stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = worker.Process.Kill()
			_ = worker.Wait()
		}
		if t.Failed() {
			t.Logf("worker process stderr:\n%s", stderr.String())
		}
	})
	e.Enqueue(hangArgs{Key: e.key("pids")})
	pid, gc := e.hung(e.key("pids"))
	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	killed = true
	checkGroupGone(t, pid, gc)
}

// hung waits for a hangArgs child's report: its pid, which must also be
// its process group, and its grandchild's pid, in the same group.
func (e *env) hung(key string) (pid, grandchild int) {
	e.T.Helper()
	report := e.pop(key)
	if _, err := fmt.Sscanf(report, "%d %d", &pid, &grandchild); err != nil {
		e.T.Fatalf("report %q: %v", report, err)
	}
	if _, g, ok := procStat(pid); !ok || g != pid {
		e.T.Errorf("child %d: in group %d (alive: %v), want its own", pid, g, ok)
	}
	if _, g, ok := procStat(grandchild); !ok || g != pid {
		e.T.Errorf("grandchild %d: in group %d (alive: %v), want %d", grandchild, g, ok, pid)
	}
	return pid, grandchild
}

// checkGroupGone waits until no live process is left in process group
// pgid (zombies, already dead, may wait for their reaper), and checks
// that the grandchild is among the dead.
func checkGroupGone(t *testing.T, pgid, grandchild int) {
	t.Helper()
	// Polled: processes exit on their own time, and /proc tells no one.
	redistest.Within(t, waitTimeout, fmt.Sprintf("process group %d to be empty", pgid), func() (bool, string) {
		live := groupMembers(pgid)
		return len(live) == 0, fmt.Sprint("live members ", live)
	})
	if state, _, ok := procStat(grandchild); ok && state != "Z" {
		t.Errorf("grandchild %d is still alive (state %s)", grandchild, state)
	}
}

// groupMembers lists the live (not zombie) processes of group pgid.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		panic(err)
	}
	var live []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if state, g, ok := procStat(pid); ok && g == pgid && state != "Z" {
			live = append(live, pid)
		}
	}
	return live
}

// procStat reads a process's state and process group from /proc; ok is
// false when it does not exist.
func procStat(pid int) (state string, pgrp int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain anything but ')'
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}
