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
	id := e.enqueue(doomedArgs{}, flow.WithMaxAttempts(1))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=deathexit", envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+e.ns)
	out, _ := cmd.Output()
	if cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("child ended with %v, want exit 4 in its death handler; stdout:\n%s", cmd.ProcessState, out)
	}
	if j := e.job(id); j.State != flow.StateArchived {
		t.Fatalf("job is %s, want archived", j.State)
	}
	ref, _ := keys.ParseRef(e.ns, id)
	if n, _ := e.rdb.ZCard(context.Background(), ref.Deaths()).Result(); n != 1 {
		t.Fatalf("%d pending death reports, want 1", n)
	}

	deaths := signal[runtime.Death]()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	clk := newTestClock(fakeStart().Add(31 * time.Second)) // past the report's grace
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour,
		OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	var d runtime.Death
	eventually(t, "the pending death report", func() (bool, string) {
		select {
		case d = <-deaths:
			return true, ""
		default:
			clk.Advance(time.Second) // the death loop sweeps on its tick
			return false, "not delivered"
		}
	})
	if d.Job.ID != id || d.State != flow.StateArchived || d.Reason != "attempts_exhausted" || d.LastError != "no luck" || d.Job.Kind != "doomed" {
		t.Fatalf("death %+v", d)
	}
	eventually(t, "the delivered report to be dropped", func() (bool, string) {
		n, err := e.rdb.ZCard(context.Background(), ref.Deaths()).Result()
		return err == nil && n == 0, fmt.Sprintf("%d pending, %v", n, err)
	})
	noRecv(t, deaths, "a second delivery")
}

// TestDeathReportsQuarantine: OnDeath sees a job quarantined at the crash
// limit, with state quarantined and reason crash_limit.
func TestDeathReportsQuarantine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	deaths := signal[runtime.Death]()
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[doomedArgs]) error { panic("kaboom") }); err != nil {
		t.Fatal(err)
	}
	e.startWorker(reg, runtime.Options{CrashLimit: 1, OnDeath: func(_ context.Context, d runtime.Death) { deaths <- d }})
	id := e.enqueue(doomedArgs{})
	d := recv(t, deaths, "the quarantine's death report")
	if d.Job.ID != id || d.State != flow.StateQuarantined || d.Reason != "crash_limit" || d.Job.CrashAttempt != 1 {
		t.Fatalf("death %+v", d)
	}
}
