package harness

// The worker under test: started in the background, warmed up, and
// stopped gracefully so that its last acks are part of the measurement.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// Warmup is a job that only tells the benchmark the worker is up: once its
// handler ran, the worker is subscribed and waiting for wake-ups, and the
// connections of both clients are open.
type Warmup struct{}

// Kind names the job type.
func (Warmup) Kind() string { return "bench.warmup" }

// bgWorker is a runtime.Worker running in the background.
type bgWorker struct {
	cancel  context.CancelFunc
	stopped chan error
	once    sync.Once
	err     error // what Run returned
}

// startWorker runs a worker on t's worker client with reg's handlers
// until stop or the end of ctx.
func startWorker(ctx context.Context, t *target, reg *flow.Registry, opts runtime.Options) (*bgWorker, error) {
	// Warnings (a failed claim, a rejected ack) matter to a benchmark; the
	// info-level chatter does not.
	opts.Logger = slog.New(slog.NewTextHandler(t.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The worker gets the client itself, not the counting wrapper (whose
	// hooks on it count all the same), so that it sees a *redis.ClusterClient
	// as a user's worker would.
	w, err := runtime.NewWorker(t.worker.UniversalClient, reg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &bgWorker{cancel: cancel, stopped: make(chan error, 1)}
	go func() { b.stopped <- w.Run(ctx) }()
	return b, nil
}

// stop shuts the worker down gracefully and waits for Run to return, so
// every handler that ran has had its outcome written to Redis. Calling it
// again returns the same result.
func (b *bgWorker) stop() error {
	b.once.Do(func() {
		b.cancel()
		b.err = <-b.stopped
	})
	return b.err
}

// registerWarmup adds the Warmup handler to reg; the channel it returns
// receives a value when a Warmup job ran.
func registerWarmup(reg *flow.Registry) (<-chan struct{}, error) {
	ran := make(chan struct{}, 1)
	err := flow.Register(reg, func(context.Context, *flow.Job[Warmup]) error {
		select {
		case ran <- struct{}{}:
		default:
		}
		return nil
	})
	return ran, err
}

// SettleTime is how long warmUp lets the worker settle after the warm-up
// job ran: its ack and the worker's first maintenance pass finish, and
// its fetch loop goes back to waiting for a wake-up. bench/peers lets the
// asynq server settle as long.
const SettleTime = 100 * time.Millisecond

// warmUp enqueues a Warmup job, waits until the handler registered by
// registerWarmup reports it ran, then lets the worker settle.
func warmUp(ctx context.Context, client *flow.Client, ran <-chan struct{}) error {
	if _, err := client.Enqueue(ctx, Warmup{}); err != nil {
		return fmt.Errorf("enqueueing the warm-up job: %w", err)
	}
	select {
	case <-ran:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the warm-up job: %w", context.Cause(ctx))
	}
	return Sleep(ctx, SettleTime)
}

// startWarm registers the warm-up job in reg, makes a producer client and
// a worker (Concurrency, completed jobs discarded) on namespace ns, and
// returns once the worker ran the warm-up job. The caller stops the worker.
func startWarm(ctx context.Context, t *target, reg *flow.Registry, ns string, concurrency int) (*flow.Client, *bgWorker, error) {
	warm, err := registerWarmup(reg)
	if err != nil {
		return nil, nil, err
	}
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return nil, nil, err
	}
	w, err := startWorker(ctx, t, reg, t.workerOptions(ns, concurrency, true))
	if err != nil {
		return nil, nil, err
	}
	if err := warmUp(ctx, client, warm); err != nil {
		_ = w.stop()
		return nil, nil, err
	}
	return client, w, nil
}
