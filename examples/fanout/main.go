// Command fanout runs one parent job that spawns many child jobs, waits for
// them without holding a worker, and joins on their results.
//
// Each child squares its number; the parent sums the squares. The program
// prints the time from enqueueing the parent to its completion and checks
// the aggregate. -fail K makes child K fail (flow.Skip) to show how the
// join policy reports it. Without REDIS_URL it runs on an embedded Redis.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/examples/internal/exampleredis"
	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// Square is a child job: its result is K².
type Square struct {
	K    int
	Fail bool // fail with flow.Skip instead
}

// Kind names the job type.
func (Square) Kind() string { return "square" }

// SumSquares is the parent job: it spawns N Square children and sums their
// results. Fail is the child told to fail (-1: none).
type SumSquares struct {
	N        int
	Fail     int
	FailFast bool
}

// Kind names the job type.
func (SumSquares) Kind() string { return "sum_squares" }

// Aggregate is the parent's result.
type Aggregate struct {
	Sum       int64
	Completed int
	Failed    []int // children that failed (CollectAll)
	Errors    []string
	StoppedBy int    // the child that stopped a FailFast join, else -1
	Reason    string // ... and why
}

func main() {
	n := flag.Int("children", 1000, "number of child jobs")
	fail := flag.Int("fail", -1, "make this child fail with flow.Skip (-1: none)")
	policy := flag.String("policy", "collectall", "join policy: collectall or failfast")
	flag.Parse()
	if *n < 1 || *fail >= *n || (*policy != "collectall" && *policy != "failfast") {
		fmt.Fprintln(os.Stderr, "fanout: need -children >= 1, -fail < -children, -policy collectall|failfast")
		os.Exit(2)
	}
	if err := run(SumSquares{N: *n, Fail: *fail, FailFast: *policy == "failfast"}); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

func run(args SumSquares) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rdb, where, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer rdb.Close()
	fmt.Println("redis:", where)

	reg := flow.NewRegistry()
	err = flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[Square]) (int64, error) {
		if job.Args.Fail {
			return 0, flow.Skip(fmt.Sprintf("child %d told to fail", job.Args.K))
		}
		return int64(job.Args.K) * int64(job.Args.K), nil
	})
	if err != nil {
		return err
	}
	var parentRuns atomic.Int32
	err = flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[SumSquares]) (Aggregate, error) {
		fmt.Printf("parent: run %d\n", parentRuns.Add(1))
		return sumSquares(ctx, job.Args)
	})
	if err != nil {
		return err
	}

	ns := fmt.Sprintf("fanout-%d", time.Now().UnixNano())
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		return err
	}
	worker, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace:   ns,
		Concurrency: 256,
		ClaimBatch:  128,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(runCtx) }()

	start := time.Now()
	res, err := client.Enqueue(ctx, args)
	if err != nil {
		return err
	}
	info, waitErr := waitFinished(ctx, client, res.ID)
	elapsed := time.Since(start)
	stop()
	if err := errors.Join(waitErr, <-stopped); err != nil {
		return err
	}
	if info.State != flow.StateCompleted {
		return fmt.Errorf("parent %s ended %s: %s", info.ID, info.State, info.LastError)
	}
	var agg Aggregate
	if err := info.DecodeResult(&agg); err != nil {
		return err
	}
	fmt.Printf("parent %s completed: %d children, enqueue to completion %s\n", info.ID, args.N, elapsed.Round(time.Microsecond))
	fmt.Printf("  runs=%d errors=%d crash_attempt=%d (waiting spent no attempt)\n", parentRuns.Load(), info.Attempt, info.CrashAttempt)
	if agg.StoppedBy >= 0 {
		fmt.Printf("  failfast: child %d stopped the join: %s\n", agg.StoppedBy, agg.Reason)
	} else {
		fmt.Printf("  aggregate: sum of squares %d from %d completed children\n", agg.Sum, agg.Completed)
	}
	for i, k := range agg.Failed {
		fmt.Printf("  child %d failed: %s\n", k, agg.Errors[i])
	}
	if err := verify(args, agg); err != nil {
		return err
	}
	fmt.Println("OK: aggregate verified")
	return nil
}

// sumSquares is the parent's work. Spawn is a durable step: when the
// parent runs again, after its children are done, the children are not
// spawned again. Join suspends the parent, without holding a worker or
// spending an attempt, until they are all done (or, under FailFast, one
// fails); its waiting error must be returned as is.
func sumSquares(ctx context.Context, args SumSquares) (Aggregate, error) {
	items := make([]flow.Item, args.N)
	for k := range items {
		items[k] = flow.Item{Args: Square{K: k, Fail: k == args.Fail}}
	}
	kids, err := flow.Spawn(ctx, "spawn", items...)
	if err != nil {
		return Aggregate{}, err
	}
	policy := flow.CollectAll
	if args.FailFast {
		policy = flow.FailFast
	}
	results, err := flow.Join[int64](ctx, kids, policy)
	if failed, ok := errors.AsType[*flow.ChildFailedError](err); ok {
		return Aggregate{StoppedBy: slices.Index(kids.IDs, failed.ID), Reason: failed.Error()}, nil
	}
	if err != nil {
		return Aggregate{}, err // children still running: the parent is suspended
	}
	agg := Aggregate{StoppedBy: -1}
	for k, r := range results { // in spawn order
		if r.State != flow.StateCompleted {
			agg.Failed = append(agg.Failed, k)
			agg.Errors = append(agg.Errors, r.State+": "+r.Error)
			continue
		}
		agg.Sum += r.Result
		agg.Completed++
	}
	return agg, nil
}

// verify recomputes the expected aggregate.
func verify(args SumSquares, agg Aggregate) error {
	if args.FailFast && args.Fail >= 0 {
		if agg.StoppedBy != args.Fail {
			return fmt.Errorf("failfast join stopped by child %d, want %d", agg.StoppedBy, args.Fail)
		}
		return nil
	}
	var want int64
	completed := 0
	for k := range args.N {
		if k != args.Fail {
			want += int64(k) * int64(k)
			completed++
		}
	}
	failed := []int{}
	if args.Fail >= 0 {
		failed = append(failed, args.Fail)
	}
	if agg.Sum != want || agg.Completed != completed || !slices.Equal(agg.Failed, failed) {
		return fmt.Errorf("aggregate %+v, want sum %d from %d children, failed %v", agg, want, completed, failed)
	}
	return nil
}

// waitFinished polls the job until it reaches a terminal state.
func waitFinished(ctx context.Context, c *flow.Client, id string) (*flow.JobInfo, error) {
	for {
		info, err := c.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		switch info.State {
		case flow.StateCompleted, flow.StateArchived, flow.StateQuarantined, flow.StateCancelled:
			return info, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s (%s): %w", id, info.State, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}
