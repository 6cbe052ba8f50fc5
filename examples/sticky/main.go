// Command sticky shows worker affinity: each customer's report job prefers
// the worker that holds that customer's data in its cache, with a fallback
// for a worker that is not there. It runs on an embedded Redis unless
// REDIS_URL is set.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sticky"
)

// Report builds a customer's report; it is cheap on the worker whose cache
// already holds that customer.
type Report struct{ Customer string }

// Kind names the job type.
func (Report) Kind() string { return "report" }

// cacheOwner is which worker keeps which customers warm.
var cacheOwner = map[string]string{"acme": "cache-a", "globex": "cache-a", "initech": "cache-b", "umbrella": "cache-c"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sticky:", err)
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

	var mu sync.Mutex
	ranOn := map[string]string{}
	var done sync.WaitGroup
	reg := flow.NewRegistry()
	err = flow.Register(reg, func(ctx context.Context, job *flow.Job[Report]) error {
		a, _ := runtime.AttemptFrom(ctx)
		mu.Lock()
		ranOn[job.Args.Customer] = workerOf(a)
		mu.Unlock()
		done.Done()
		return nil
	})
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("sticky-%d", time.Now().UnixNano())
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return err
	}
	customers := []string{"acme", "globex", "initech", "umbrella"}
	done.Add(len(customers))
	for _, c := range customers {
		// cache-c is not running today: its customer falls back to any
		// worker after a short wait instead of waiting for ever.
		route := sticky.To(cacheOwner[c], sticky.After(300*time.Millisecond))
		if _, err := client.Enqueue(ctx, Report{Customer: c}, route); err != nil {
			return err
		}
		fmt.Printf("  enqueued  %-9s prefers %s\n", c, cacheOwner[c])
	}
	for _, name := range []string{"cache-a", "cache-b"} {
		w, err := runtime.NewWorker(rdb, reg, runtime.Options{
			Namespace: ns, WorkerID: name, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			return err
		}
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _ = w.Run(runCtx) }()
	}
	done.Wait()
	sort.Strings(customers)
	for _, c := range customers {
		note := "its cache's worker"
		if ranOn[c] != cacheOwner[c] {
			note = "fallback: " + cacheOwner[c] + " was away"
		}
		fmt.Printf("  ran       %-9s on %s (%s)\n", c, ranOn[c], note)
	}
	return nil
}

// workerOf is the worker running the attempt.
func workerOf(a *runtime.Attempt) string {
	if a == nil {
		return "?"
	}
	return a.Worker
}
