package chaos

// The test's side of the worker processes.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/proctest"
)

// procTimeout bounds every wait on a worker process.
const procTimeout = 30 * time.Second

// fleet starts and signals worker processes, restarts those that exit on
// their own (an exit pill ended them), and counts the stale writes they
// report.
type fleet struct {
	t   *testing.T
	cfg workerConfig

	staleSteps, staleOutcomes atomic.Int64
	pillExits                 atomic.Int64 // "exit pill" lines: exit pills that ended their process
	// pushes are the jobs (IDs in their partition) that workers reported
	// starting pushed ("push started") and handing back ("push handed back").
	pushes pushReports
	// starts counts, per job (its ID in its partition), the attempts that
	// reached the ledger handler ("started").
	starts attemptStarts
	live   []*proc // started and not yet ended, in start order
	// exited counts the processes that ended with exitPillStatus (on their
	// own, or while being killed or stopped by the test).
	exited int
	// launched counts the processes launched: with cfg.NoRetries, every
	// other one retries nothing itself
	launched int
}

// proc is one worker process.
type proc struct {
	cmd     *exec.Cmd
	stderr  *proctest.Buffer
	stalled bool
	ready   chan struct{} // closed when the process prints "ready"
	done    chan struct{} // closed once cmd.Wait returned
}

func newFleet(t *testing.T, cfg workerConfig) *fleet {
	f := &fleet{t: t, cfg: cfg}
	t.Cleanup(func() {
		for _, p := range f.live {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return f
}

// start starts a worker process with cfg and waits until it is ready.
func (f *fleet) start(cfg workerConfig) *proc {
	f.t.Helper()
	p := f.launch(cfg)
	f.waitReady(p)
	return p
}

// launch starts a worker process with cfg; it is ready when p.ready is
// closed.
func (f *fleet) launch(cfg workerConfig) *proc {
	t := f.t
	t.Helper()
	cfg.NoRetries = cfg.NoRetries && f.launched%2 == 1
	f.launched++
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stderr: &proctest.Buffer{}, ready: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), envWorker+"="+string(raw))
	p.cmd.Stdout = &proctest.Lines{Line: func(l string) { f.report(p.ready, l) }}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait() // the exit status is read from ProcessState
		close(p.done)
	}()
	f.live = append(f.live, p)
	return p
}

// waitReady waits until p is ready.
func (f *fleet) waitReady(p *proc) {
	t := f.t
	t.Helper()
	select {
	case <-p.ready:
	case <-p.done:
		if isClosed(p.ready) { // it was ready, then ended
			return
		}
		t.Fatalf("worker process %d ended before it was ready: %v; stderr:\n%s", p.cmd.Process.Pid, p.cmd.ProcessState, tail(p.stderr.String()))
	case <-time.After(procTimeout):
		t.Fatalf("worker process %d not ready within %s; stderr:\n%s", p.cmd.Process.Pid, procTimeout, tail(p.stderr.String()))
	}
}

// restartExited replaces, with processes of cfg, the live processes that
// have ended on their own, and returns how many. It does not wait for the
// new ones to be ready. Only an exit pill may end a process (exit status
// exitPillStatus); any other end fails the test.
func (f *fleet) restartExited(cfg workerConfig) int {
	f.t.Helper()
	n := 0
	for _, p := range slices.Clone(f.live) {
		if !isClosed(p.done) {
			continue
		}
		f.ended(p)
		if !f.pillExit(p) {
			f.t.Errorf("worker process %d ended on its own: %v; stderr:\n%s", p.cmd.Process.Pid, p.cmd.ProcessState, tail(p.stderr.String()))
		}
		f.launch(cfg)
		n++
	}
	return n
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// pillExit reports whether ended process p exited with exitPillStatus,
// and counts it.
func (f *fleet) pillExit(p *proc) bool {
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Exited() && ws.ExitStatus() == exitPillStatus {
		f.exited++
		return true
	}
	return false
}

// running returns the live processes that are ready, not stopped and not
// ended.
func (f *fleet) running() []*proc {
	var out []*proc
	for _, p := range f.live {
		if !p.stalled && isClosed(p.ready) && !isClosed(p.done) {
			out = append(out, p)
		}
	}
	return out
}

// unstalled counts the live processes that are not stopped and not ended,
// ready or starting.
func (f *fleet) unstalled() int {
	n := 0
	for _, p := range f.live {
		if !p.stalled && !isClosed(p.done) {
			n++
		}
	}
	return n
}

// signal sends sig to p. A process that has ended (an exit pill) is left
// for the caller to find ended.
func (f *fleet) signal(p *proc, sig syscall.Signal) {
	f.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		f.t.Fatalf("%s to worker process %d: %v", sig, p.cmd.Process.Pid, err)
	}
}

// kill SIGKILLs p and reaps it. An exit pill may have ended it first.
func (f *fleet) kill(p *proc) {
	f.t.Helper()
	f.signal(p, syscall.SIGKILL)
	<-p.done
	f.ended(p)
	if ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus); (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) && !f.pillExit(p) {
		f.t.Errorf("worker process ended with %v, want killed by SIGKILL; stderr:\n%s", p.cmd.ProcessState, tail(p.stderr.String()))
	}
}

// stall stops p with SIGSTOP; resume continues it.
func (f *fleet) stall(p *proc) {
	f.t.Helper()
	f.signal(p, syscall.SIGSTOP)
	p.stalled = true
}

func (f *fleet) resume(p *proc) {
	f.t.Helper()
	f.signal(p, syscall.SIGCONT)
	p.stalled = false
}

// term shuts p down gracefully (SIGTERM), once it is ready, and expects
// exit status 0, or exitPillStatus: an exit pill may end it first, or
// during its shutdown.
func (f *fleet) term(p *proc) {
	f.t.Helper()
	f.waitReady(p)
	f.signal(p, syscall.SIGTERM)
	select {
	case <-p.done:
		f.ended(p)
		if !p.cmd.ProcessState.Success() && !f.pillExit(p) {
			f.t.Errorf("worker process %d: %v; stderr:\n%s", p.cmd.Process.Pid, p.cmd.ProcessState, tail(p.stderr.String()))
		}
	case <-time.After(procTimeout):
		f.t.Fatalf("worker process %d did not shut down within %s; stderr:\n%s", p.cmd.Process.Pid, procTimeout, tail(p.stderr.String()))
	}
}

// ended removes p from the live processes and checks its race report.
func (f *fleet) ended(p *proc) {
	for i, q := range f.live {
		if q == p {
			f.live = append(f.live[:i], f.live[i+1:]...)
			break
		}
	}
	if s := p.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		f.t.Errorf("worker process %d reported a data race:\n%s", p.cmd.Process.Pid, s)
	}
}

// report reads a line of a worker's stdout: "ready", a stale write it
// reports, or an exit pill about to end it (child_test.go, jobs_test.go).
func (f *fleet) report(ready chan<- struct{}, line string) {
	switch {
	case line == "ready":
		close(ready)
	case strings.HasPrefix(line, "stale step "):
		f.staleSteps.Add(1)
	case line == "stale outcome":
		f.staleOutcomes.Add(1)
	case strings.HasPrefix(line, "exit pill "):
		f.pillExits.Add(1)
	case strings.HasPrefix(line, "started "):
		f.starts.add(strings.TrimPrefix(line, "started "))
	case strings.HasPrefix(line, "push started "):
		f.pushes.add(&f.pushes.started, strings.TrimPrefix(line, "push started "))
	case strings.HasPrefix(line, "push handed back "):
		f.pushes.add(&f.pushes.handedBack, strings.TrimPrefix(line, "push handed back "))
	default:
		fmt.Fprintln(os.Stderr, "chaos worker:", line)
	}
}

// tail is the last lines of a process's output.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}
