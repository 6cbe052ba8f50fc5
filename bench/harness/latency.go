package harness

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
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
	Pickup distribution `json:"pickup"`
	// EnqueueCall is how long the Enqueue call took (one round trip): the
	// part of Pickup spent before the job is in Redis.
	EnqueueCall distribution `json:"enqueue_call"`
	// MaxSendLagMS is the furthest behind its schedule an Enqueue was sent;
	// near zero when the producer kept the rate.
	MaxSendLagMS float64 `json:"max_send_lag_ms"`
}

// distribution summarises latencies, in milliseconds.
type distribution struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
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
	got := newCountdown(n)
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
		got.tick()
		return nil
	}); err != nil {
		return nil, err
	}
	warm, err := registerWarmup(reg)
	if err != nil {
		return nil, err
	}
	client, err := flow.NewClient(t.producer, t.clientOptions(ns, reg))
	if err != nil {
		return nil, err
	}
	w, err := startWorker(ctx, t, reg, t.workerOptions(ns, cfg.Concurrency, true))
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := warmUp(ctx, client, warm); err != nil {
		return nil, err
	}

	calls, maxLag, err := sendPaced(ctx, client, n, cfg.Rate)
	if err != nil {
		return nil, err
	}
	if err := got.wait(ctx, "waiting for the handlers"); err != nil {
		return nil, err
	}
	if err := w.stop(); err != nil {
		return nil, fmt.Errorf("stopping the worker: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return &latencyResult{
		RatePerSec: cfg.Rate, DurationSeconds: cfg.Duration.Seconds(), Jobs: n,
		Pickup: summarize(pickups), EnqueueCall: summarize(calls),
		MaxSendLagMS: ms(maxLag),
	}, nil
}

// sendPaced enqueues n Stamp jobs, one Enqueue call at a time, at rate per
// second. Job i is due at start + i/rate; a late send is not made up by
// bunching: it goes at once and counts as lag. It returns how long each
// call took and the greatest lag.
func sendPaced(ctx context.Context, client *flow.Client, n, rate int) ([]time.Duration, time.Duration, error) {
	interval := time.Duration(float64(time.Second) / float64(rate))
	calls := make([]time.Duration, 0, n)
	var maxLag time.Duration
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if err := sleepUntil(ctx, due); err != nil {
			return nil, 0, fmt.Errorf("enqueueing: %w (%d of %d sent)", err, i, n)
		}
		sent := time.Now()
		maxLag = max(maxLag, sent.Sub(due))
		if _, err := client.Enqueue(ctx, Stamp{At: sent.UnixNano()}); err != nil {
			return nil, 0, fmt.Errorf("enqueueing job %d: %w", i, err)
		}
		calls = append(calls, time.Since(sent))
	}
	return calls, maxLag, nil
}

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// summarize computes nearest-rank percentiles of ds (which it sorts).
func summarize(ds []time.Duration) distribution {
	if len(ds) == 0 {
		return distribution{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		return ds[max(int(math.Ceil(p*float64(len(ds))))-1, 0)]
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return distribution{
		P50: ms(rank(0.50)), P90: ms(rank(0.90)), P99: ms(rank(0.99)),
		Max: ms(ds[len(ds)-1]), Mean: ms(sum / time.Duration(len(ds))),
	}
}

// ms converts d to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
