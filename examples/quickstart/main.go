// Command quickstart enqueues a few jobs and runs a worker until they are
// done, printing each job's journey. It needs nothing installed: without
// REDIS_URL it runs on an embedded Redis (miniredis).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// SendWelcome is a job: its fields are the arguments, Kind its stable name.
type SendWelcome struct {
	User  string
	Email string
}

// Kind names the job type.
func (SendWelcome) Kind() string { return "send_welcome" }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Println("redis:", where)

	users := []string{"ada", "grace", "linus"}
	var done sync.WaitGroup
	done.Add(len(users))
	reg := flow.NewRegistry()
	err = flow.Register(reg, func(ctx context.Context, job *flow.Job[SendWelcome]) error {
		fmt.Printf("  running   %-6s attempt %d\n", job.Args.User, job.Attempt+1)
		if job.Args.User == "grace" && job.Attempt == 0 {
			// A transient failure: the job is retried after a backoff.
			fmt.Printf("  failed    %-6s (mail server busy), will retry\n", job.Args.User)
			return errors.New("mail server busy")
		}
		fmt.Printf("  completed %-6s welcome mail sent to %s\n", job.Args.User, job.Args.Email)
		done.Done()
		return nil
	})
	if err != nil {
		return err
	}

	ns := fmt.Sprintf("quickstart-%d", time.Now().UnixNano())
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return err
	}
	worker, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: ns,
		Backoff:   func(int) time.Duration { return 200 * time.Millisecond },
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(runCtx) }()

	ids := map[string]string{}
	for _, u := range users {
		res, err := client.Enqueue(ctx, SendWelcome{User: u, Email: u + "@example.com"})
		if err != nil {
			return err
		}
		ids[u] = res.ID
		fmt.Printf("  enqueued  %-6s as %s\n", u, res.ID)
	}
	done.Wait()
	stop()
	if err := <-stopped; err != nil {
		return err
	}
	fmt.Println("final states:")
	for _, u := range users {
		info, err := client.Job(ctx, ids[u])
		if err != nil {
			return err
		}
		fmt.Printf("  %-6s %-9s attempts(errors)=%d crashes=%d last error=%q\n",
			u, info.State, info.Attempt, info.CrashAttempt, info.LastError)
	}
	return nil
}
