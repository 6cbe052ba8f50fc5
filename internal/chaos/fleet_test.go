package chaos

// The test's side of the worker processes.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/proctest"
)

// procTimeout bounds every wait on a worker process.
const procTimeout = 30 * time.Second

// fleet starts and signals worker processes and counts the stale writes
// they report.
type fleet struct {
	t   *testing.T
	cfg workerConfig

	staleSteps, staleOutcomes atomic.Int64
	live                      []*proc // started and not yet ended, in start order
}

// proc is one worker process.
type proc struct {
	cmd     *exec.Cmd
	stderr  *proctest.Buffer
	stalled bool
}

func newFleet(t *testing.T, cfg workerConfig) *fleet {
	f := &fleet{t: t, cfg: cfg}
	t.Cleanup(func() {
		for _, p := range f.live {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return f
}

// start starts a worker process with cfg and waits until it is ready.
func (f *fleet) start(cfg workerConfig) *proc {
	t := f.t
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	p := &proc{stderr: &proctest.Buffer{}}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), envWorker+"="+string(raw))
	p.cmd.Stdout = &proctest.Lines{Line: func(l string) { f.report(ready, l) }}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.live = append(f.live, p)
	select {
	case <-ready:
	case <-time.After(procTimeout):
		t.Fatalf("worker process %d not ready within %s; stderr:\n%s", p.cmd.Process.Pid, procTimeout, tail(p.stderr.String()))
	}
	return p
}

// running returns the live processes that are not stopped.
func (f *fleet) running() []*proc {
	var out []*proc
	for _, p := range f.live {
		if !p.stalled {
			out = append(out, p)
		}
	}
	return out
}

func (f *fleet) signal(p *proc, sig syscall.Signal) {
	f.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		f.t.Fatalf("%s to worker process %d: %v", sig, p.cmd.Process.Pid, err)
	}
}

// kill SIGKILLs p and reaps it.
func (f *fleet) kill(p *proc) {
	f.t.Helper()
	f.signal(p, syscall.SIGKILL)
	_ = p.cmd.Wait()
	f.ended(p)
	if ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
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

// term shuts p down gracefully (SIGTERM) and expects exit status 0.
func (f *fleet) term(p *proc) {
	f.t.Helper()
	f.signal(p, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		f.ended(p)
		if err != nil {
			f.t.Errorf("worker process %d: %v; stderr:\n%s", p.cmd.Process.Pid, err, tail(p.stderr.String()))
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

// report reads a line of a worker's stdout: "ready", or a stale write it
// reports (child_test.go, jobs_test.go).
func (f *fleet) report(ready chan<- struct{}, line string) {
	switch {
	case line == "ready":
		close(ready)
	case strings.HasPrefix(line, "stale step "):
		f.staleSteps.Add(1)
	case line == "stale outcome":
		f.staleOutcomes.Add(1)
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
