package step_test

// Worker processes for the crash tests (crash_test.go, zombie_test.go).
//
// The test binary re-executes itself as a worker process. The child is
// recognised in init, before TestMain: main_test.go's TestMain starts a
// redis-server and a 3-node cluster before running any test, and a child
// entering through a test function would start four redis-servers of its
// own per process and, once SIGKILLed, leave them running (reparented to
// init) with their temporary directories. A child gets its whole set-up in
// one environment variable (envChild, a JSON childConfig), connects to the
// parent's servers, prints "ready <worker ID>" and works until SIGKILL or
// SIGTERM (graceful shutdown, exit status 0).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

// envChild, when set, makes the test binary a worker process configured by
// its value (a JSON childConfig).
const envChild = "SLUICE_STEP_CHILD"

// procTimeout bounds every wait on a child process or on Redis state.
const procTimeout = 20 * time.Second

func init() {
	if cfg := os.Getenv(envChild); cfg != "" {
		os.Exit(childMain(cfg))
	}
}

// childConfig is a worker process's set-up.
type childConfig struct {
	Role        string // crash, zombie or fanout: which handlers it registers
	Addrs       []string
	Cluster     bool
	User        string // Redis ACL user ("": the default user)
	Password    string
	NS          string
	Queues      map[string]int
	Partitions  map[string]int
	Concurrency int
	Lease       time.Duration
	Renew       time.Duration
	Maintenance time.Duration
	CrashLimit  int
}

// childClientName names a worker process's Redis connections, so that the
// parent can tell when Redis has dropped them.
func childClientName(pid int) string { return "steptest-" + strconv.Itoa(pid) }

// fastLeases is the set-up of a worker whose lost jobs are reclaimed fast.
func fastLeases(role, ns string, addrs ...string) childConfig {
	return childConfig{
		Role: role, Addrs: addrs, NS: ns, Lease: time.Second, Renew: 300 * time.Millisecond,
		Maintenance: 200 * time.Millisecond,
	}
}

func childMain(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child: bad config:", err)
		return 2
	}
	var rdb redis.UniversalClient
	if cfg.Cluster {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Addrs, Username: cfg.User, Password: cfg.Password, ClientName: childClientName(os.Getpid())})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: cfg.Addrs[0], Username: cfg.User, Password: cfg.Password, ClientName: childClientName(os.Getpid())})
	}
	defer rdb.Close()
	var reg *flow.Registry
	switch cfg.Role {
	case "crash":
		reg = ledgerRegistry(cfg.NS, rdb)
	case "zombie":
		reg = zombieRegistry(cfg.NS, zombieBlock(os.NewFile(3, "unblock")))
	case "fanout":
		reg = fanRegistry()
	default:
		fmt.Fprintln(os.Stderr, "child: unknown role", cfg.Role)
		return 2
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: cfg.NS, Queues: cfg.Queues, Partitions: cfg.Partitions,
		Concurrency: cfg.Concurrency, Lease: cfg.Lease, RenewInterval: cfg.Renew,
		MaintenanceInterval: cfg.Maintenance, CrashLimit: cfg.CrashLimit,
		ShutdownWindow: 5 * time.Second, Backoff: func(int) time.Duration { return 0 },
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Printf("ready %s\n", w.ID())
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child: Run:", err)
		return 2
	}
	return 0
}

// ---- the crash-resume job: five steps, each committing to a ledger ----

type ledgerJob struct{ N int }

func (ledgerJob) Kind() string { return "ledger" }

const ledgerSteps = 5

// ledgerAmount is what step i (1-based) of job n adds to each ledger.
func ledgerAmount(n, i int) int64 { return int64(1000*(n+1) + i) }

// ledgerField names step i of job n in the shared ledger.
func ledgerField(n, i int) string { return fmt.Sprintf("j%d:s%d", n, i) }

// foreignLedger is a hash outside every job's slot: effects on it are
// relayed through the outbox.
func foreignLedger(ns string) string { return ns + ":ledger" }

// stepRuns counts, outside Sluice, how often each step's work started.
func stepRuns(ns string) string { return ns + ":runs" }

// ledgerRegistry: each step does some work (10-40 ms) and then commits one
// effect on a key in the job's slot (SlotKey: a key of the job's partition,
// applied by the step script) and one on the foreign ledger (outboxed,
// relayed).
func ledgerRegistry(ns string, rdb redis.UniversalClient) *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[ledgerJob]) error {
		n := job.Args.N
		for i := 1; i <= ledgerSteps; i++ {
			if err := rdb.HIncrBy(ctx, stepRuns(ns), ledgerField(n, i), 1).Err(); err != nil {
				return err
			}
			select {
			case <-time.After(time.Duration(10+rand.IntN(31)) * time.Millisecond):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			name := fmt.Sprintf("s%d", i)
			err := step.Commit(ctx, name,
				idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), ledgerField(n, i), ledgerAmount(n, i)),
				idempotency.HIncrBy(foreignLedger(ns), ledgerField(n, i), ledgerAmount(n, i)),
			)
			if err != nil {
				return err
			}
		}
		return nil
	}))
	return reg
}

// ---- the zombie job ----

type zombieJob struct{}

func (zombieJob) Kind() string { return "zombie" }

// zombieHooks let a process change how the zombie job behaves after its
// first step: block (and return the context the rest of the handler uses),
// and report the outcome of each later write.
type zombieHooks struct {
	block  func(ctx context.Context, job *flow.Job[zombieJob]) context.Context
	report func(what string, err error)
}

// zombieRegistry: step s1 commits, then the handler may block; then it
// commits step s2, advances and finishes the cursor "rows" and stages
// completion effects, each with a local and a foreign ledger effect. It
// tries every write even after one failed, and returns the first error.
func zombieRegistry(ns string, h zombieHooks) *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[zombieJob]) error {
		fx := func(ctx context.Context, field string, n int64) []sluicetype.Effect {
			return []sluicetype.Effect{
				idempotency.HIncrBy(idempotency.SlotKey(ctx, "ledger"), field, n),
				idempotency.HIncrBy(foreignLedger(ns), field, n),
			}
		}
		if err := step.Commit(ctx, "s1", fx(ctx, "s1", 1)...); err != nil {
			return err
		}
		if h.block != nil {
			ctx = h.block(ctx, job)
		}
		var first error
		note := func(what string, err error) {
			if h.report != nil {
				h.report(what, err)
			}
			if first == nil {
				first = err
			}
		}
		note("s2", step.Commit(ctx, "s2", fx(ctx, "s2", 1)...))
		cur, err := step.NewCursor[int](ctx, "rows", 1)
		note("cursor", err)
		if err == nil {
			note("advance", cur.Advance(ctx, 10, fx(ctx, "rows", 10)...))
			note("finish", cur.Finish(ctx))
		}
		note("complete", step.OnComplete(ctx, fx(ctx, "final", 1)...))
		return first
	}))
	return reg
}

// zombieBlock is the child's hook: announce the job, wait for a byte on
// unblock ignoring cancellation (a handler that ignores its context), then
// carry on with a context that is never cancelled, so that every later
// write reaches Redis and must be refused there by the fence.
func zombieBlock(unblock *os.File) zombieHooks {
	return zombieHooks{
		block: func(ctx context.Context, job *flow.Job[zombieJob]) context.Context {
			fmt.Printf("blocked %s %d\n", job.ID, job.Fence)
			var b [1]byte
			_, err := unblock.Read(b[:])
			fmt.Printf("unblocked read=%v cause=%v\n", err, context.Cause(ctx))
			return context.WithoutCancel(ctx)
		},
		report: func(what string, err error) {
			fmt.Printf("zombie %s stale=%v err=%v\n", what, errors.Is(err, step.ErrStale), err)
		},
	}
}

// ---- fan-out: a parent spawning children and joining on them ----

type fanParent struct {
	N     int
	Queue string        // the children's queue ("": the parent's)
	Work  time.Duration // each child's work
}

func (fanParent) Kind() string { return "fan_parent" }

type fanKid struct {
	I    int
	Work time.Duration
}

func (fanKid) Kind() string { return "fan_kid" }

// fanRegistry: a child squares its index after some work; the parent
// spawns N children, joins on all of them and returns their results in
// order (-1 for a child that failed).
func fanRegistry() *flow.Registry {
	reg := flow.NewRegistry()
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[fanKid]) (int, error) {
		if job.Args.Work > 0 {
			select {
			case <-time.After(job.Args.Work):
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			}
		}
		return job.Args.I * job.Args.I, nil
	}))
	must(flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[fanParent]) ([]int, error) {
		items := make([]flow.Item, job.Args.N)
		for i := range items {
			items[i] = flow.Item{Args: fanKid{I: i, Work: job.Args.Work}}
			if job.Args.Queue != "" {
				items[i].Opts = []flow.EnqueueOption{flow.WithQueue(job.Args.Queue)}
			}
		}
		kids, err := flow.Spawn(ctx, "spawn", items...)
		if err != nil {
			return nil, err
		}
		res, err := flow.Join[int](ctx, kids, flow.CollectAll)
		if err != nil {
			return nil, err
		}
		out := make([]int, len(res))
		for i, r := range res {
			out[i] = r.Result
			if r.State != flow.StateCompleted {
				out[i] = -1
			}
		}
		return out, nil
	}))
	return reg
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// ---- the parent's side ----

// proc is a worker process started by startProc.
type proc struct {
	cfg    childConfig
	cmd    *exec.Cmd
	out    *proctest.LineLog
	stderr *proctest.Buffer
	id     string // worker ID
	exited bool
	killed bool // by the test, with SIGKILL
}

// startProc starts a worker process and waits until it is ready. extra
// files become the child's fd 3, 4, ...
func startProc(t *testing.T, cfg childConfig, extra ...*os.File) *proc {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cfg: cfg, out: &proctest.LineLog{}, stderr: &proctest.Buffer{}}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.stderr
	p.cmd.ExtraFiles = extra
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.exited {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() && !p.killed { // the killed ones are many, and their story ends at the kill
			t.Logf("worker process %d (%s) stdout:\n%s\nstderr:\n%s", p.cmd.Process.Pid, cfg.Role, p.out, tail(p.stderr.String(), 40))
		}
	})
	line := p.waitLine(t, "ready ")
	p.id = strings.TrimPrefix(line, "ready ")
	return p
}

// waitLine waits for a line of the child's stdout that starts with prefix.
func (p *proc) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	line, ok := p.out.Wait(prefix, procTimeout)
	if !ok {
		t.Fatalf("worker process %d did not print %q within %s; stdout:\n%s\nstderr:\n%s",
			p.cmd.Process.Pid, prefix, procTimeout, p.out, tail(p.stderr.String(), 40))
	}
	return line
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s to worker process %d: %v", sig, p.cmd.Process.Pid, err)
	}
}

// kill SIGKILLs the process, reaps it and waits until Redis has dropped
// its connections: commands it sent before dying, still in the server's
// input buffers, have then run, and what the test reads next is final.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.exited, p.killed = true, true
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker process ended with %v, want killed by SIGKILL; stderr:\n%s", p.cmd.ProcessState, tail(p.stderr.String(), 40))
	}
	p.checkRaces(t)
	name := "name=" + childClientName(p.cmd.Process.Pid) + " "
	for _, addr := range p.cfg.Addrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		// Polled: Redis closes a dead client's connections on its own time.
		redistest.Within(t, procTimeout, "Redis "+addr+" dropped the dead worker's connections", func() (bool, string) {
			list, err := rdb.ClientList(context.Background()).Result()
			return err == nil && !strings.Contains(list, name), fmt.Sprintf("%d connections named %s (%v)", strings.Count(list, name), name, err)
		})
		rdb.Close()
	}
}

// stop shuts the process down gracefully (SIGTERM) and expects status 0.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		p.exited = true
		if err != nil {
			t.Errorf("worker process %d: %v; stderr:\n%s", p.cmd.Process.Pid, err, tail(p.stderr.String(), 40))
		}
	case <-time.After(procTimeout):
		t.Fatalf("worker process %d did not shut down within %s", p.cmd.Process.Pid, procTimeout)
	}
	p.checkRaces(t)
}

func (p *proc) checkRaces(t *testing.T) {
	t.Helper()
	if s := p.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		t.Errorf("worker process %d reported a data race:\n%s", p.cmd.Process.Pid, s)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
