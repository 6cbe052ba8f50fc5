package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

type Resize struct{ Image string }

func (Resize) Kind() string { return "resize" }

// runUntil runs a worker with handlers reg and options o on rdb until
// done is closed, then shuts it down gracefully: the attempts' outcomes
// are acked and their events delivered when it returns.
func runUntil(rdb redis.UniversalClient, reg *flow.Registry, o runtime.Options, done <-chan struct{}) {
	w, err := runtime.NewWorker(rdb, reg, o)
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- w.Run(ctx) }()
	<-done
	stop()
	<-stopped
}

// A middleware that logs every attempt's job and outcome, around every
// handler the worker runs.
func ExampleMiddleware() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	// Text logs without the time, so that the output is stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	var done sync.WaitGroup
	done.Add(1)
	logging := func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
			defer done.Done()
			res, err := next.Work(ctx, a)
			logger.Info("attempt done", "job", a.ID, "kind", a.Kind, "attempt", a.Attempt+1, "err", err)
			return res, err
		})
	}

	reg := flow.NewRegistry()
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[Resize]) error { return nil })
	client, _ := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
	_, _ = client.Enqueue(context.Background(), Resize{Image: "cat.png"}, flow.WithID("cat"))

	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	runUntil(rdb, reg, runtime.Options{
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []runtime.Middleware{logging},
	}, finished)
	// Output: level=INFO msg="attempt done" job=default:0:cat kind=resize attempt=1 err=<nil>
}

// A middleware that counts attempts by kind and outcome, as a metrics
// library's counter would: panics reach it as a *runtime.PanicError.
func ExampleMiddleware_metrics() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	var (
		mu     sync.Mutex
		counts = map[string]int{}
		done   sync.WaitGroup
	)
	done.Add(3)
	metrics := func(next runtime.Handler) runtime.Handler {
		return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
			defer done.Done()
			res, err := next.Work(ctx, a)
			outcome := "ok"
			var pe *runtime.PanicError
			switch {
			case errors.As(err, &pe):
				outcome = "panic"
			case err != nil:
				outcome = "error"
			}
			mu.Lock()
			counts[a.Kind+" "+outcome]++
			mu.Unlock()
			return res, err
		})
	}

	reg := flow.NewRegistry()
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[Resize]) error {
		switch job.Args.Image {
		case "broken.png":
			return errors.New("cannot decode")
		case "bomb.png":
			panic("out of memory")
		}
		return nil
	})
	client, _ := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
	for _, img := range []string{"cat.png", "broken.png", "bomb.png"} {
		_, _ = client.Enqueue(context.Background(), Resize{Image: img}, flow.WithMaxAttempts(1))
	}

	finished := make(chan struct{})
	go func() { done.Wait(); close(finished) }()
	runUntil(rdb, reg, runtime.Options{
		Logger:     slog.New(slog.DiscardHandler),
		CrashLimit: 1,
		Middleware: []runtime.Middleware{metrics},
	}, finished)

	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprint(k, " ", n))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// resize error 1
	// resize ok 1
	// resize panic 1
}

// OnEvent follows every attempt; Run delivers the queued events before
// it returns.
func ExampleOptions_onEvent() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	done := make(chan struct{})
	reg := flow.NewRegistry()
	_ = flow.Register(reg, func(ctx context.Context, job *flow.Job[Resize]) error {
		if job.Attempt == 0 {
			return errors.New("thumbnail service busy")
		}
		close(done)
		return nil
	})
	client, _ := flow.NewClient(rdb, flow.ClientOptions{Registry: reg})
	_, _ = client.Enqueue(context.Background(), Resize{Image: "cat.png"}, flow.WithID("cat"))

	var events []string // OnEvent is called from one goroutine at a time
	runUntil(rdb, reg, runtime.Options{
		Logger:  slog.New(slog.DiscardHandler),
		Backoff: func(int) time.Duration { return 0 },
		OnEvent: func(_ context.Context, e runtime.Event) {
			events = append(events, fmt.Sprintf("%s %s attempt %d %v", e.JobID, e.Type, e.Attempt, e.Err))
		},
	}, done)
	for _, e := range events {
		fmt.Println(e)
	}
	// Output:
	// default:0:cat started attempt 1 <nil>
	// default:0:cat retried attempt 1 thumbnail service busy
	// default:0:cat started attempt 2 <nil>
	// default:0:cat completed attempt 2 <nil>
}
