package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"
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
	got := newCountdown(n)
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
		got.tick()
		return nil
	})
	if err := r.startWarm(ctx); err != nil {
		return nil, err
	}
	calls, maxLag, err := r.sendPaced(ctx, n, cfg.Rate)
	if err != nil {
		return nil, err
	}
	if err := got.wait(ctx, "waiting for the handlers"); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return latencyFigures(summarize(pickups), summarize(calls), ms(maxLag)), nil
}

// latencyJobs is how many jobs the latency scenario sends: cfg.Rate per
// second for cfg.Duration, as the Sluice program computes it.
func latencyJobs(cfg config) int {
	return max(int(cfg.Duration.Seconds()*float64(cfg.Rate)), 1)
}

// sendPaced enqueues n latency tasks, one Enqueue call at a time, at rate
// per second: task i is due at start + i/rate; a late send goes at once
// and counts as lag. It returns how long each call took and the greatest
// lag.
func (r *asynqRig) sendPaced(ctx context.Context, n, rate int) ([]time.Duration, time.Duration, error) {
	interval := time.Duration(float64(time.Second) / float64(rate))
	calls := make([]time.Duration, 0, n)
	var maxLag time.Duration
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		if err := sleepCtx(ctx, time.Until(due)); err != nil {
			return nil, 0, fmt.Errorf("enqueueing: %w (%d of %d sent)", err, i, n)
		}
		sent := time.Now()
		maxLag = max(maxLag, sent.Sub(due))
		payload := binary.BigEndian.AppendUint64(nil, uint64(sent.UnixNano()))
		if _, err := r.client.EnqueueContext(ctx, asynq.NewTask(typeLatency, payload), asynq.Queue(r.queue)); err != nil {
			return nil, 0, fmt.Errorf("enqueueing task %d: %w", i, err)
		}
		calls = append(calls, time.Since(sent))
	}
	return calls, maxLag, nil
}

// distribution summarises latencies, in milliseconds; its JSON names are
// those of the Sluice program's report.
type distribution struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// latencyFigures names the latency scenario's figures.
func latencyFigures(pickup, call distribution, maxLagMS float64) figures {
	return figures{
		"latency pickup p50": pickup.P50, "latency pickup p90": pickup.P90,
		"latency pickup p99": pickup.P99, "latency pickup max": pickup.Max,
		"latency enqueue-call p50": call.P50, "latency max send lag": maxLagMS,
	}
}

// summarize computes nearest-rank percentiles of ds (which it sorts), as
// the Sluice program does.
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

// errBadPayload: a task whose payload this benchmark did not write.
var errBadPayload = errors.New("unexpected task payload")
