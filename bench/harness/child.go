package harness

// Worker child processes: the crash-resume scenario kills one with SIGKILL,
// the soak scenario watches one's memory. The benchmark re-executes its own
// binary (go run ./bench, sluice, or a test binary: whichever imports this
// package) with envChild set to a JSON childConfig; init sees it before
// main (or TestMain) runs and turns the process into a worker that prints
// what it did on stdout, one line at a time, until SIGKILL or SIGTERM
// (graceful shutdown, exit status 0).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/step"
)

// envChild names the environment variable that makes a process a worker
// child.
const envChild = "SLUICE_BENCH_CHILD"

// Child roles.
const (
	roleCrash = "crash" // runs CrashFlow workflows, printing "step <i>" after each checkpoint
	roleSoak  = "soak"  // runs Noop jobs, printing "done <n>" every childReport
)

// childReport is how often a soak child prints its count.
const childReport = 100 * time.Millisecond

// childConfig is a worker child's set-up.
type childConfig struct {
	Role        string        `json:"role"`
	URL         string        `json:"url"`
	NS          string        `json:"ns"`
	Partitions  int           `json:"partitions"`
	Concurrency int           `json:"concurrency"`
	Lease       time.Duration `json:"lease"`
	Maintenance time.Duration `json:"maintenance"`
	Retention   time.Duration `json:"retention"`
	StepWork    time.Duration `json:"step_work"`
}

func init() {
	if raw := os.Getenv(envChild); raw != "" {
		os.Exit(childMain(raw))
	}
}

// childMain is a worker child's whole life.
func childMain(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench child: bad config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := childRun(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		return 1
	}
	return 0
}

func childRun(ctx context.Context, cfg childConfig) error {
	rdb, err := flow.Connect(cfg.URL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var (
		out  = bufio.NewWriter(os.Stdout)
		mu   sync.Mutex
		done atomic.Int64
	)
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(line + "\n")
		out.Flush()
	}
	reg := flow.NewRegistry()
	switch cfg.Role {
	case roleCrash:
		err = registerCrashFlow(reg, cfg.StepWork, crashHooks{checkpointed: func(i int) { say("step " + strconv.Itoa(i)) }})
	case roleSoak:
		err = flow.Register(reg, func(context.Context, *flow.Job[Noop]) error {
			done.Add(1)
			return nil
		})
	default:
		err = fmt.Errorf("unknown role %q", cfg.Role)
	}
	if err != nil {
		return err
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: cfg.NS, Partitions: map[string]int{"default": cfg.Partitions},
		Concurrency: cfg.Concurrency, Lease: cfg.Lease, MaintenanceInterval: cfg.Maintenance,
		RetainCompleted: cfg.Retention,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	say("ready")
	if cfg.Role != roleSoak {
		return <-ran
	}
	tick := time.NewTicker(childReport)
	defer tick.Stop()
	for {
		select {
		case err := <-ran:
			say("done " + strconv.FormatInt(done.Load(), 10))
			return err
		case <-tick.C:
			say("done " + strconv.FormatInt(done.Load(), 10))
		}
	}
}

// child is a worker child process, seen from the benchmark.
type child struct {
	cmd   *exec.Cmd
	lines chan string // its stdout, line by line; closed at its end
	ended chan struct{}
	err   error // Wait's, once ended is closed
}

// startChild starts a worker child of cfg and waits until it is ready.
// Its stderr goes to the benchmark's.
func startChild(ctx context.Context, cfg childConfig, stderr io.Writer) (*child, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &child{cmd: exec.Command(exe), lines: make(chan string, 1024), ended: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	c.cmd.Stderr = stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting a worker process: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = c.cmd.Wait()
		close(c.ended)
	}()
	if _, err := c.await(ctx, func(line string) bool { return line == "ready" }); err != nil {
		c.kill()
		return nil, fmt.Errorf("worker process: %w", err)
	}
	return c, nil
}

// await reads lines until ok accepts one, which it returns.
func (c *child) await(ctx context.Context, ok func(string) bool) (string, error) {
	for {
		select {
		case line, open := <-c.lines:
			if !open {
				<-c.ended
				return "", fmt.Errorf("it ended (%v)", c.err)
			}
			if ok(line) {
				return line, nil
			}
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
}

// pid is the child's process ID.
func (c *child) pid() int { return c.cmd.Process.Pid }

// kill sends SIGKILL and waits until the process is gone.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	c.drain()
}

// terminate sends SIGTERM: a graceful shutdown. Whoever reads its lines
// sees their end when it exited.
func (c *child) terminate() { _ = c.cmd.Process.Signal(syscall.SIGTERM) }

// drain discards the child's lines until it ended.
func (c *child) drain() {
	for range c.lines {
	}
	<-c.ended
}

// count parses a soak child's "done <n>" line.
func count(line string) (int64, bool) {
	v, ok := strings.CutPrefix(line, "done ")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// crashHooks tell a CrashFlow handler's owner what it does: started when
// the handler starts, ran when step i's function runs (not when it is
// skipped as checkpointed before), checkpointed once step i is.
type crashHooks struct {
	started           func()
	ran, checkpointed func(i int)
}

// registerCrashFlow adds the CrashFlow handler to reg: WorkflowSteps durable
// steps, each doing work for work, calling the hooks that are not nil.
func registerCrashFlow(reg *flow.Registry, work time.Duration, h crashHooks) error {
	return flow.Register(reg, func(ctx context.Context, _ *flow.Job[CrashFlow]) error {
		if h.started != nil {
			h.started()
		}
		for i, name := range stepNames {
			if err := step.Do(ctx, name, func(ctx context.Context) error {
				if h.ran != nil {
					h.ran(i)
				}
				return Sleep(ctx, work)
			}); err != nil {
				return err
			}
			if h.checkpointed != nil {
				h.checkpointed(i)
			}
		}
		return nil
	})
}
