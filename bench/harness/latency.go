package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// Stamp is the latency job: At is when it was enqueued, in UnixNano.
type Stamp struct {
	At int64
}

// Kind names the job type.
func (Stamp) Kind() string { return "bench.latency" }

// latencyResult is the latency scenario's report.
type latencyResult struct {
	RatePerSec      int     `json:"rate_per_sec"`
	DurationSeconds float64 `json:"duration_seconds"`
	Jobs            int     `json:"jobs"`
	// Pickup is the latency from just before Enqueue to the start of the
	// handler.
	Pickup Distribution `json:"pickup"`
	// EnqueueCall is how long the Enqueue call took (one round trip): the
	// part of Pickup spent before the job is in Redis.
	EnqueueCall Distribution `json:"enqueue_call"`
	// Ping is a PING on the producer's client at the same pace (at most
	// one second of them), after the jobs, the worker still running: the
	// machine's round trip at this rate, which bounds EnqueueCall (one
	// round trip) and Pickup (two: the Enqueue, then the worker's claim)
	// from below. On a VM whose CPUs sleep between calls it is several
	// times the round trip of back-to-back calls.
	Ping Distribution `json:"ping"`
	// MaxSendLagMS is the furthest behind its schedule an Enqueue was sent;
	// near zero when the producer kept the rate.
	MaxSendLagMS float64 `json:"max_send_lag_ms"`
}

// runLatency enqueues single jobs at cfg.Rate per second for cfg.Duration
// to an idle, warmed-up worker, and measures how long each job took from
// enqueue to the start of its handler.
func runLatency(ctx context.Context, t *target, cfg config) (res *latencyResult, err error) {
	n := max(int(cfg.Duration.Seconds()*float64(cfg.Rate)), 1)
	t.progress("latency: %d jobs at %d/s", n, cfg.Rate)
	ns := newNamespace("latency")
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()

	reg := flow.NewRegistry()
	got := NewCountdown(n)
	var (
		mu      sync.Mutex
		pickups = make([]time.Duration, 0, n)
	)
	if err := flow.Register(reg, func(_ context.Context, job *flow.Job[Stamp]) error {
		// Wall clock on both ends, in one process: no skew to correct.
		d := time.Since(time.Unix(0, job.Args.At))
		mu.Lock()
		pickups = append(pickups, d)
		mu.Unlock()
		got.Tick()
		return nil
	}); err != nil {
		return nil, err
	}
	client, w, err := startWarm(ctx, t, reg, ns, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	defer w.stop()

	calls, maxLag, err := SendPaced(ctx, n, cfg.Rate, func(_ int, sent time.Time) error {
		_, err := client.Enqueue(ctx, Stamp{At: sent.UnixNano()})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueueing: %w", err)
	}
	if err := got.Wait(ctx, "waiting for the handlers"); err != nil {
		return nil, err
	}
	pings, _, err := SendPaced(ctx, min(n, cfg.Rate), cfg.Rate, func(int, time.Time) error {
		return t.producer.Ping(ctx).Err()
	})
	if err != nil {
		return nil, fmt.Errorf("the PING yardstick: %w", err)
	}
	if err := w.stop(); err != nil {
		return nil, fmt.Errorf("stopping the worker: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return &latencyResult{
		RatePerSec: cfg.Rate, DurationSeconds: cfg.Duration.Seconds(), Jobs: n,
		Pickup: Summarize(pickups), EnqueueCall: Summarize(calls), Ping: Summarize(pings),
		MaxSendLagMS: Millis(maxLag),
	}, nil
}
