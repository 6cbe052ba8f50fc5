package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// A poison pill and an innocent job in a worker process that runs two
// runtime.Workers: the suspect rule is the process's, not a Worker's.

type twoCulprit struct{}

func (twoCulprit) Kind() string { return "two_culprit" }

type twoInnocent struct{}

func (twoInnocent) Kind() string { return "two_innocent" }

// twoWorkersChildMain is a worker process (envChild=twoworkers, or
// oneworker for the control: one Worker of the same capacity) whose
// culprit ends the process once the innocent runs beside it, or after
// 2 s.
func twoWorkersChildMain(workers, conc int) int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envChildAddr)})
	ns := os.Getenv(envChildNS)
	innocentRan := ns + ":two:innocent:" + strconv.Itoa(os.Getpid())
	reg := flow.NewRegistry()
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
	}
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[twoCulprit]) error {
		// Fault injection: wait (bounded) until the innocent has run in
		// this process too (its push), then take the process down
		rdb.BLPop(ctx, 2*time.Second, innocentRan)
		os.Exit(3) // the poison pill takes its process down
		return nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[twoInnocent]) error {
		rdb.RPush(ctx, innocentRan, 1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
			return nil
		}
	}))
	done := make(chan error, 2)
	for range workers {
		w, err := runtime.NewWorker(rdb, reg, runtime.Options{
			Namespace: ns, Concurrency: conc, IdlePoll: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		must(err)
		go func() { done <- w.Run(context.Background()) }()
	}
	fmt.Fprintln(os.Stderr, "child: Run returned", <-done)
	return 2
}

// TestInnocentNotQuarantinedBesideCulprit: a handler that kills its
// process costs the jobs it shared the process with at most one crash
// each, and only it reaches the crash limit (CrashLimit 2), when the
// process runs two runtime.Workers as when it runs one: after the first
// death, the culprit and the innocent are both suspects, and never run
// side by side in the process again.
func TestInnocentNotQuarantinedBesideCulprit(t *testing.T) {
	t.Parallel()
	t.Run("two Workers in one process", func(t *testing.T) { culpritRounds(t, "twoworkers") })
	t.Run("one Worker", func(t *testing.T) { culpritRounds(t, "oneworker") })
}

func culpritRounds(t *testing.T, mode string) {
	t.Parallel()
	e := newEnv(t, nil)
	culprit := e.Enqueue(twoCulprit{})
	innocent := e.Enqueue(twoInnocent{})
	ref, _ := keys.ParseRef(e.NS, culprit)
	st := store.New(e.RDB, store.Config{ // the reaper, its clock past every lease
		NS: e.NS, CrashLimit: 2, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour,
		Now: func() time.Time { return time.Now().Add(time.Minute) },
	})
	for round := 1; round <= 3 && e.Job(culprit).State != flow.StateQuarantined; round++ {
		var stderr proctest.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+mode, envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+e.NS)
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Logf("round %d: the process ended: %v", round, err)
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: the process did not die; stderr:\n%s", round, stderr.String())
		}
		if _, err := st.Maintain(context.Background(), ref.Partition, 10, 0, 0); err != nil {
			t.Fatal(err)
		}
		c, i := e.Job(culprit), e.Job(innocent)
		if c.State == flow.StateCompleted || i.State == flow.StateCompleted {
			t.Logf("round %d: a job completed", round)
		}
		t.Logf("round %d: culprit %s crash_attempt %d; innocent %s crash_attempt %d", round, c.State, c.CrashAttempt, i.State, i.CrashAttempt)
	}
	if c := e.Job(culprit); c.State != flow.StateQuarantined {
		t.Fatalf("culprit %s, want quarantined", c.State)
	}
	if i := e.Job(innocent); i.CrashAttempt > 1 || i.State == flow.StateQuarantined {
		t.Errorf("innocent job: %s with %d crashes, the second shared with the culprit in one process; want at most one crash, never quarantined",
			i.State, i.CrashAttempt)
	}
}
