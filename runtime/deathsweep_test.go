package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

type doomedArgs struct{}

func (doomedArgs) Kind() string { return "doomed" }

// deathExitChildMain is a worker process (envChild=deathexit) whose
// doomed handler fails and whose death handler ends the process before it
// returns: the archive is durable, the report was never delivered.
func deathExitChildMain() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envChildAddr)})
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error {
		return errors.New("no luck")
	}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: os.Getenv(envChildNS),
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, nil)),
		OnDeath: func(_ context.Context, d runtime.Death) {
			fmt.Printf("death %s\n", d.Job.ID)
			os.Exit(4)
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Printf("worker %s\n", w.ID())
	return 2 + boolInt(w.Run(context.Background()) != nil)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDeathReportAtLeastOnce: a worker process that dies in its death
// handler, after the archive is durable, does not lose the report: it
// stays pending in the job's slot, and another worker's sweep delivers it
// once its grace has passed, then drops it.
func TestDeathReportAtLeastOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.Enqueue(doomedArgs{}, flow.WithMaxAttempts(1))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=deathexit", envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+e.NS)
	out, _ := cmd.Output()
	if cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("child ended with %v, want exit 4 in its death handler; stdout:\n%s", cmd.ProcessState, out)
	}
	if j := e.Job(id); j.State != flow.StateArchived {
		t.Fatalf("job is %s, want archived", j.State)
	}
	ref, _ := keys.ParseRef(e.NS, id)
	if n, _ := e.RDB.ZCard(context.Background(), ref.Deaths()).Result(); n != 1 {
		t.Fatalf("%d pending death reports, want 1", n)
	}

	deaths := testkit.Chan[runtime.Death]()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	const tick = time.Second                               // the death loop sweeps on the maintenance tick
	clk := newTestClock(fakeStart().Add(31 * time.Second)) // past the report's grace
	w := e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: tick,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	e.Sig.Swept.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 }) // its tick is armed
	clk.Advance(tick)
	d := testkit.Recv(t, deaths, "the pending death report")
	if d.Job.ID != id || d.State != flow.StateArchived || d.Reason != "attempts_exhausted" || d.LastError != "no luck" || d.Job.Kind != "doomed" {
		t.Fatalf("death %+v", d)
	}
	e.Sig.Delivered.WaitFor(t, func(d testsignal.Job) bool { return d.JobID == id })
	if n, err := e.RDB.ZCard(context.Background(), ref.Deaths()).Result(); err != nil || n != 0 {
		t.Errorf("%d death reports pending after the delivery (%v), want none", n, err)
	}
	testkit.NoRecv(t, deaths, "a second delivery")
}

// TestDeathReportsQuarantine: OnDeath sees a job quarantined at the crash
// limit, with state quarantined and reason crash_limit.
func TestDeathReportsQuarantine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	deaths := testkit.Chan[runtime.Death]()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error { panic("kaboom") }); err != nil {
		t.Fatal(err)
	}
	e.startWorker(reg, runtime.Options{CrashLimit: 1, OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	id := e.Enqueue(doomedArgs{})
	d := testkit.Recv(t, deaths, "the quarantine's death report")
	if d.Job.ID != id || d.State != flow.StateQuarantined || d.Reason != "crash_limit" || d.Job.CrashAttempt != 1 {
		t.Fatalf("death %+v", d)
	}
}

// TestDeathSweepWhileDeliveringDeaths: the sweep of death reports left
// pending in Redis runs every maintenance tick even while the worker
// delivers deaths of its own more often than that. Its timer was armed
// again after every delivery, so a worker archiving a job every half
// tick never swept, and a dead worker's reports waited as long (found by
// an audit).
func TestDeathSweepWhileDeliveringDeaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error { return errors.New("no luck") }))
	// a worker without OnDeath archives x: its report stays pending
	clk0 := newTestClock(fakeStart())
	w0 := e.startWorker(reg, runtime.Options{Clock: clk0, IdlePoll: time.Hour, MaintenanceInterval: time.Hour})
	x := e.Enqueue(doomedArgs{}, flow.WithMaxAttempts(1))
	e.WaitState(x, flow.StateArchived)
	w0.stop(clk0, runtime.Options{})

	const tick = time.Second
	clk := newTestClock(fakeStart().Add(31 * time.Second)) // past x's report's grace
	deaths := make(chan string, 64)
	w := e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, MaintenanceInterval: tick,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d.Job.ID }})
	e.Sig.Swept.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == 0 }) // its tick is armed
	got := map[string]bool{}
	for i := 0; i < 8 && !got[x]; i++ { // a death of its own every half tick, for four ticks
		y := e.Enqueue(doomedArgs{}, flow.WithMaxAttempts(1))
		e.Sig.Delivered.WaitFor(t, func(d testsignal.Job) bool { return d.JobID == y })
		clk.Advance(tick / 2)
		for drained := false; !drained; {
			select {
			case id := <-deaths:
				got[id] = true
			case <-time.After(50 * time.Millisecond):
				drained = true
			}
		}
	}
	if !got[x] {
		t.Fatalf("the pending death report of %s was not swept in four ticks of store time", x)
	}
}
