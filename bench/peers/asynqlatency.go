package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/sluicehq/sluice/bench/harness"
)

// asynqLatency enqueues single tasks at cfg.Rate per second for
// cfg.Duration to an idle, warmed-up server, and measures how long each
// took from just before Enqueue to the start of its handler, as the
// Sluice program's latency scenario does.
func asynqLatency(ctx context.Context, t *target, cfg config, setup asynqSetup) (out figures, err error) {
	n := latencyJobs(cfg)
	progress("asynq (%s) latency: %d tasks at %d/s", setup.Name, n, cfg.Rate)
	r := newAsynqRig(t, setup, cfg, "latency")
	defer r.close(ctx, &err)
	got := harness.NewCountdown(n)
	var (
		mu      sync.Mutex
		pickups = make([]time.Duration, 0, n)
	)
	r.mux.HandleFunc(typeLatency, func(_ context.Context, task *asynq.Task) error {
		if len(task.Payload()) != 8 {
			return fmt.Errorf("%w (%d bytes): %w", errBadPayload, len(task.Payload()), asynq.SkipRetry)
		}
		// Wall clock on both ends, in one process: no skew to correct.
		d := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(task.Payload()))))
		mu.Lock()
		pickups = append(pickups, d)
		mu.Unlock()
		got.Tick()
		return nil
	})
	if err := r.startWarm(ctx); err != nil {
		return nil, err
	}
	calls, maxLag, err := harness.SendPaced(ctx, n, cfg.Rate, func(_ int, sent time.Time) error {
		payload := binary.BigEndian.AppendUint64(nil, uint64(sent.UnixNano()))
		_, err := r.client.EnqueueContext(ctx, asynq.NewTask(typeLatency, payload), asynq.Queue(r.queue))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueueing: %w", err)
	}
	if err := got.Wait(ctx, "waiting for the handlers"); err != nil {
		return nil, err
	}
	// The round trip at this pace, the server still running, as the
	// Sluice program times it after its jobs.
	pings, _, err := harness.SendPaced(ctx, min(n, cfg.Rate), cfg.Rate, func(int, time.Time) error {
		return t.producer.Ping(ctx).Err()
	})
	if err != nil {
		return nil, fmt.Errorf("the PING yardstick: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return latencyFigures(harness.Summarize(pickups), harness.Summarize(calls), harness.Summarize(pings), harness.Millis(maxLag)), nil
}

// latencyJobs is how many jobs the latency scenario sends: cfg.Rate per
// second for cfg.Duration, as the Sluice program computes it.
func latencyJobs(cfg config) int {
	return max(int(cfg.Duration.Seconds()*float64(cfg.Rate)), 1)
}

// latencyFigures names the latency scenario's figures.
func latencyFigures(pickup, call, ping harness.Distribution, maxLagMS float64) figures {
	return figures{
		"latency pickup p50": pickup.P50, "latency pickup p90": pickup.P90,
		"latency pickup p99": pickup.P99, "latency pickup max": pickup.Max,
		"latency enqueue-call p50": call.P50, "latency ping p50": ping.P50, "latency max send lag": maxLagMS,
	}
}

// errBadPayload: a task whose payload this benchmark did not write.
var errBadPayload = errors.New("unexpected task payload")
