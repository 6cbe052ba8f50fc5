package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
)

// A poison pill that kills its process, and innocent jobs that share the
// process with it: the real-process test of suspect isolation.

type exitArgs struct{}

func (exitArgs) Kind() string { return "poison_exit" }

type innocentArgs struct{ N int }

func (innocentArgs) Kind() string { return "innocent" }

// poisonChildMain is a worker process (envChild=poison) whose poison_exit
// handler ends the process with os.Exit(3) and whose innocent handler
// takes a moment, so that several share the process when it dies.
func poisonChildMain() int {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envChildAddr)})
	reg := flow.NewRegistry()
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
	}
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[exitArgs]) error {
		// Fault injection, not a wait: live a moment so that innocents
		// are claimed beside it when it takes its process down.
		time.Sleep(50 * time.Millisecond)
		os.Exit(3)
		return nil
	}))
	must(flow.Register(reg, func(ctx context.Context, job *flow.Job[innocentArgs]) error {
		select {
		case <-time.After(300 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: os.Getenv(envChildNS), Lease: time.Second, Concurrency: 8,
		MaintenanceInterval: 200 * time.Millisecond, IdlePoll: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	must(err)
	fmt.Printf("worker %s\n", w.ID())
	err = w.Run(context.Background())
	fmt.Fprintln(os.Stderr, "child: Run returned", err)
	return 2
}

// TestPoisonCollateral: a handler that kills its process (os.Exit) shares
// worker processes with 40 innocent jobs; the processes are restarted as
// they die. Only the culprit is quarantined, and no innocent job is
// charged more than the one crash of a death it happened to share: after
// a crash, a job never runs beside another job with a crash on record.
func TestPoisonCollateral(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	culprit := e.Enqueue(exitArgs{})
	var innocents []string
	for i := range 40 {
		innocents = append(innocents, e.Enqueue(innocentArgs{N: i}))
	}

	ctx, stop := context.WithCancel(context.Background())
	var fleet sync.WaitGroup
	deaths := make(chan struct{}, 100)
	for range 2 { // two worker processes, each restarted when it dies
		fleet.Go(func() {
			for ctx.Err() == nil {
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), envChild+"=poison", envChildAddr+"="+shared.Server.Addr(), envChildNS+"="+e.NS)
				if err := cmd.Run(); err == nil || ctx.Err() != nil {
					return
				}
				deaths <- struct{}{}
			}
		})
	}
	defer func() {
		stop()
		fleet.Wait()
	}()

	// Polled: worker processes run the jobs, whose signals do not reach
	// the test. Three deaths, each a lease of 1 s, a reap and a crash
	// delay (1 s, then 2 s) and a process restart: longer than one
	// waitTimeout on a loaded machine.
	var j *flow.JobInfo
	redistest.Within(t, 3*waitTimeout, "the culprit to be quarantined", func() (bool, string) {
		var err error
		j, err = e.Client.Job(context.Background(), culprit)
		if err != nil {
			return false, err.Error()
		}
		return j.State == flow.StateQuarantined, fmt.Sprintf("%+v", summarize(j))
	})
	if j.CrashAttempt != 3 || j.Reason != "crash_limit" {
		t.Errorf("culprit: crash_attempt %d reason %q, want 3 crash_limit", j.CrashAttempt, j.Reason)
	}
	charged := 0
	for _, id := range innocents {
		j := e.PollState(id, flow.StateCompleted) // worked by the processes
		if j.CrashAttempt > 1 {
			t.Errorf("innocent %s was charged %d crashes, want at most 1", id, j.CrashAttempt)
		}
		charged += j.CrashAttempt
	}
	t.Logf("%d process deaths; %d of %d innocent jobs charged one crash", len(deaths), charged, len(innocents))
	if len(deaths) < 3 {
		t.Errorf("%d process deaths, want the culprit's 3", len(deaths))
	}
}
