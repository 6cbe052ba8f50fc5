package main

// The asynq side's machinery: a server on a fresh queue, warmed up like
// the Sluice worker, producers, and the end of a run (every ack written).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/sluicehq/sluice/bench/harness"
)

// asynqSetup is one way of configuring the asynq server.
type asynqSetup struct {
	// Name labels the setup in the report: "asynq default", "asynq tuned".
	Name string `json:"name"`
	// TaskCheckInterval is asynq.Config.TaskCheckInterval: how long its
	// fetch loop sleeps (½ to 1½ times it) after finding the queues
	// empty; 0 leaves asynq's default (1s).
	TaskCheckInterval time.Duration `json:"task_check_interval_ns"`
}

// Task types of the asynq side.
const (
	typeWarmup  = "peers:warmup"
	typeNoop    = "peers:noop"
	typeLatency = "peers:latency"
	typeChain   = "peers:chain"
)

// asynqRig is one asynq run: a fresh queue, its handlers, a client for
// the producers and, once started, a server.
type asynqRig struct {
	t      *target
	setup  asynqSetup
	cfg    config
	queue  string
	mux    *asynq.ServeMux
	client *asynq.Client
	srv    *asynq.Server
	warm   chan struct{}
}

// newAsynqRig makes a rig on a fresh queue named after scenario; register
// adds the scenario's handlers to its mux. The caller must call close.
func newAsynqRig(t *target, setup asynqSetup, cfg config, scenario string) *asynqRig {
	r := &asynqRig{
		t: t, setup: setup, cfg: cfg, queue: newQueue(scenario), mux: asynq.NewServeMux(),
		client: asynq.NewClientFromRedisClient(t.producer), warm: make(chan struct{}, 1),
	}
	r.mux.HandleFunc(typeWarmup, func(context.Context, *asynq.Task) error {
		select {
		case r.warm <- struct{}{}:
		default:
		}
		return nil
	})
	return r
}

// start starts an asynq server on the rig's queue with cfg.Concurrency.
func (r *asynqRig) start() error {
	r.srv = asynq.NewServerFromRedisClient(r.t.worker, asynq.Config{
		Concurrency:       r.cfg.Concurrency,
		Queues:            map[string]int{r.queue: 1},
		TaskCheckInterval: r.setup.TaskCheckInterval,
		LogLevel:          asynq.WarnLevel,
	})
	return r.srv.Start(r.mux)
}

// startWarm starts the server, enqueues a warm-up task, waits until it
// ran, then lets the server settle: after it, the server is idle and
// polling an empty queue.
func (r *asynqRig) startWarm(ctx context.Context) error {
	if err := r.start(); err != nil {
		return err
	}
	if _, err := r.client.EnqueueContext(ctx, asynq.NewTask(typeWarmup, nil), asynq.Queue(r.queue)); err != nil {
		return fmt.Errorf("enqueueing the warm-up task: %w", err)
	}
	select {
	case <-r.warm:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the warm-up task: %w", context.Cause(ctx))
	}
	// As long as the Sluice program lets its worker settle.
	return harness.Sleep(ctx, harness.SettleTime)
}

// finish waits until done counted every task or workflow, then until
// the queue's active list is empty: every task that was taken has had its
// outcome written. That marks the end of a run. (Server.Shutdown is not
// timed: it waits for the fetch loop's sleep on an empty queue, up to 1½
// TaskCheckInterval.)
func (r *asynqRig) finish(ctx context.Context, done *harness.Countdown) error {
	if err := done.Wait(ctx, "processing"); err != nil {
		return err
	}
	for {
		n, err := r.t.admin.LLen(ctx, activeKey(r.queue)).Result()
		if err != nil {
			return fmt.Errorf("waiting for the acks: %w", err)
		}
		if n == 0 {
			return nil
		}
		if err := harness.Sleep(ctx, 200*time.Microsecond); err != nil {
			return fmt.Errorf("waiting for the acks (%d tasks still active): %w", n, err)
		}
	}
}

// close shuts the server down, deletes the queue's keys, and joins any
// error doing so to *err.
func (r *asynqRig) close(ctx context.Context, err *error) {
	if r.srv != nil {
		r.srv.Shutdown()
	}
	*err = errors.Join(*err, r.t.cleanup(context.WithoutCancel(ctx), r.queue))
}

// produce enqueues n tasks, the i-th made by task(i), from cfg.Producers
// goroutines each calling Enqueue for one task at a time (asynq has no
// batch enqueue), and returns how long that took. The first error stops
// every producer.
func (r *asynqRig) produce(ctx context.Context, n int, task func(i int) *asynq.Task, opts ...asynq.Option) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opts = append([]asynq.Option{asynq.Queue(r.queue)}, opts...)
	var (
		claimed atomic.Int64 // tasks taken by a producer so far
		sent    atomic.Int64 // tasks enqueued so far
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range r.cfg.Producers {
		wg.Go(func() {
			for {
				i := claimed.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				if _, err := r.client.EnqueueContext(ctx, task(int(i)), opts...); err != nil {
					cancel(err)
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, fmt.Errorf("enqueueing: %w (%d of %d enqueued)", err, sent.Load(), n)
	}
	return time.Since(start), nil
}
