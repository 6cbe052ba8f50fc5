//go:build linux

package isolated_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// leakArgs runs a child (leakMain) that starts a grandchild holding its
// stdout and exits without a reply.
type leakArgs struct{}

func (leakArgs) Kind() string { return "iso_leak" }

// leakMain is such a child: the grandchild sleeps with the child's stdout,
// in the child's process group or (setsid) in a session of its own; its
// pid goes to stderr, so that the test can kill it.
func leakMain(setsid bool) int {
	gc := exec.Command(os.Args[0], sleeperArg)
	gc.Stdout = os.Stdout
	gc.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "grandchild %d\n", gc.Process.Pid)
	return 3
}

// TestExitWithStdoutHeld: a child that exits while a process it started
// still holds its stdout (a shell script's background job, a leaked
// descriptor) is a crash once ExitGrace has passed, not an attempt that
// runs until its lease or timeout ends. A grandchild in the child's group
// is killed with it.
func TestExitWithStdoutHeld(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"group", "setsid"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			hd, err := isolated.Handler(isolated.Command{Path: os.Args[0], Args: []string{leakArg, mode}, Env: command().Env}, isolated.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e.startWorker(isolated.Handlers{Kinds: map[string]runtime.Handler{leakArgs{}.Kind(): hd}}, runtime.Options{CrashLimit: 1})
			j := e.WaitState(e.Enqueue(leakArgs{}), flow.StateQuarantined)
			if len(j.Errors) != 1 {
				t.Fatalf("errors %+v, want one", j.Errors)
			}
			r := j.Errors[0]
			var gc int
			if i := strings.Index(r.Stack, "grandchild "); i >= 0 {
				_, _ = fmt.Sscan(r.Stack[i+len("grandchild "):], &gc)
			}
			if gc > 0 && mode == "setsid" {
				t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
			}
			if j.CrashAttempt != 1 || j.Attempt != 0 || r.Class != "child_crash" || !strings.Contains(r.Message, "exited without a reply: exit status 3") || gc == 0 {
				t.Errorf("crash_attempt %d attempt %d, error %s %q (stack %q); want a crash, exit status 3, with the grandchild's pid",
					j.CrashAttempt, j.Attempt, r.Class, r.Message, r.Stack)
			}
			if mode == "group" && gc > 0 {
				// Polled: the grandchild dies on its own time, and /proc tells no one.
				redistest.Within(t, waitTimeout, fmt.Sprintf("grandchild %d to die", gc), func() (bool, string) {
					state, _, ok := procStat(gc)
					return !ok || state == "Z", "state " + state
				})
			}
		})
	}
}
