// Command isolated runs some job kinds in child processes: one job's
// handler segfaults, another's calls os.Exit, a third's child dies midway
// and its next attempt resumes from its checkpoint. The crashing jobs are
// quarantined after three crashes each, while every other job, isolated or
// in-process, completes in a worker that never goes down. It needs nothing
// installed: without REDIS_URL it runs on an embedded Redis (miniredis).
//
// The program is its own child: started with the argument "child", it
// serves one attempt (isolated.Main).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		isolated.Main(childRegistry())
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "isolated:", err)
		os.Exit(1)
	}
}

// crashLimit is the number of crashes that quarantines a job.
const crashLimit = 3

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Println("redis:", where)

	// The worker: Resize, Segfault and Exit run in child processes (this
	// program, started as "child", with an empty environment); Tally runs
	// in the worker itself.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child, err := isolated.Handler(isolated.Command{Path: self, Args: []string{"child"}},
		isolated.Options{Stderr: os.Stderr}) // show what the children print
	if err != nil {
		return err
	}
	inproc := flow.NewRegistry()
	if err := flow.RegisterResult(inproc, func(ctx context.Context, job *flow.Job[Tally]) (int, error) {
		return job.Args.N * job.Args.N, nil
	}); err != nil {
		return err
	}
	handlers := isolated.Handlers{
		Kinds: map[string]runtime.Handler{Resize{}.Kind(): child, Segfault{}.Kind(): child, Exit{}.Kind(): child},
		Next:  inproc,
	}
	ns := fmt.Sprintf("isolated-%d", time.Now().UnixNano())
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		return err
	}
	worker, err := runtime.NewWorker(rdb, handlers, runtime.Options{
		Namespace: ns, CrashLimit: crashLimit, Concurrency: 8, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(runCtx) }()

	// What is expected of each job: its final state and crash count.
	type expect struct {
		name    string
		state   string
		crashes int
	}
	jobs := map[string]expect{}
	var order []string
	add := func(args flow.Args, name, state string, crashes int) error {
		res, err := client.Enqueue(ctx, args)
		jobs[res.ID] = expect{name, state, crashes}
		order = append(order, res.ID)
		return err
	}
	err = errors.Join(
		add(Segfault{}, "segfault", flow.StateQuarantined, crashLimit),
		add(Exit{Code: 3}, "os.Exit(3)", flow.StateQuarantined, crashLimit),
	)
	for i := 1; i <= 4; i++ {
		err = errors.Join(err,
			add(Resize{Image: i, DieOnce: i == 2}, fmt.Sprintf("resize %d", i), flow.StateCompleted, btoi(i == 2)),
			add(Tally{N: i}, fmt.Sprintf("tally %d", i), flow.StateCompleted, 0))
	}
	if err != nil {
		return err
	}
	if err := waitTerminal(ctx, client, jobs); err != nil {
		return err
	}
	stop()
	if err := <-stopped; err != nil {
		return err
	}

	fmt.Println("final states (the worker process never went down):")
	failed := false
	for _, id := range order {
		want := jobs[id]
		info, err := client.Job(ctx, id)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  %-11s %-11s crashes=%d", want.name, info.State, info.CrashAttempt)
		if len(info.Errors) > 0 {
			line += fmt.Sprintf("  last error: %s: %s", info.Errors[0].Class, info.Errors[0].Message)
		}
		fmt.Println(line)
		if info.State != want.state || info.CrashAttempt != want.crashes || info.Attempt != 0 {
			fmt.Printf("    unexpected: want %s with %d crashes and no spent attempt\n", want.state, want.crashes)
			failed = true
		}
	}
	if failed {
		return errors.New("some jobs did not end as expected")
	}
	return nil
}

// waitTerminal polls the jobs until each is completed or quarantined.
func waitTerminal[E any](ctx context.Context, client *flow.Client, jobs map[string]E) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left := 0
		for id := range jobs {
			info, err := client.Job(ctx, id)
			if err != nil {
				return err
			}
			if info.State != flow.StateCompleted && info.State != flow.StateQuarantined {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d jobs still running: %w", left, ctx.Err())
		case <-tick.C:
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
