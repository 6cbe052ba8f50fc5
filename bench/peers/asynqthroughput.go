package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/sluicehq/sluice/bench/harness"
)

// Throughput run modes and retentions, named as the Sluice program names
// them.
const (
	// modeConcurrent: producers enqueue while an idle, warmed-up server
	// processes; timed from the first enqueue to the last task acked.
	modeConcurrent = "enqueue+process"
	// modeDrain: the queue is filled first, then a server is started on
	// it; timed from the server's start to the last task acked.
	modeDrain = "drain"
	// keepRetention: completed tasks are kept for 24h (asynq.Retention);
	// discardRetention: they are deleted at once (asynq's default).
	keepRetention    = "keep"
	discardRetention = "discard"
)

// throughputModes are the throughput scenario's runs, in the Sluice
// program's order.
var throughputModes = []struct{ mode, retention string }{
	{modeConcurrent, discardRetention}, {modeDrain, discardRetention},
	{modeConcurrent, keepRetention}, {modeDrain, keepRetention},
}

// asynqThroughput runs every throughput mode with setup and returns the
// figures under their metric names.
func asynqThroughput(ctx context.Context, t *target, cfg config, setup asynqSetup) (figures, error) {
	out := figures{}
	for _, m := range throughputModes {
		progress("asynq (%s) throughput: %s, %s completed tasks", setup.Name, m.mode, m.retention)
		enq, proc, err := asynqNoopRun(ctx, t, cfg, setup, m.mode, m.retention == keepRetention)
		if err != nil {
			return out, fmt.Errorf("%s, %s: %w", m.mode, m.retention, err)
		}
		n := float64(cfg.Jobs)
		out[throughputKey(m.mode, m.retention, "enqueue/s")] = n / enq.Seconds()
		out[throughputKey(m.mode, m.retention, "processed/s")] = n / proc.Seconds()
	}
	return out, nil
}

// throughputKey names a throughput figure.
func throughputKey(mode, retention, what string) string {
	return "throughput " + mode + " " + retention + " " + what
}

// asynqNoopRun runs cfg.Jobs no-op tasks through a fresh queue in mode
// and returns how long the producers and the processing took, timed as
// the Sluice program times its runs.
func asynqNoopRun(ctx context.Context, t *target, cfg config, setup asynqSetup, mode string, keep bool) (enqueue, process time.Duration, err error) {
	r := newAsynqRig(t, setup, cfg, "throughput")
	defer r.close(ctx, &err)
	done := harness.NewCountdown(cfg.Jobs)
	r.mux.HandleFunc(typeNoop, func(context.Context, *asynq.Task) error {
		done.Tick()
		return nil
	})
	var opts []asynq.Option
	if keep {
		opts = append(opts, asynq.Retention(24*time.Hour))
	}
	noop := func(int) *asynq.Task { return asynq.NewTask(typeNoop, nil) }

	var start time.Time
	if mode == modeDrain {
		if enqueue, err = r.produce(ctx, cfg.Jobs, noop, opts...); err != nil {
			return 0, 0, err
		}
		start = time.Now()
		if err := r.start(); err != nil {
			return 0, 0, err
		}
	} else {
		if err := r.startWarm(ctx); err != nil {
			return 0, 0, err
		}
		start = time.Now()
		if enqueue, err = r.produce(ctx, cfg.Jobs, noop, opts...); err != nil {
			return 0, 0, err
		}
	}
	if err := r.finish(ctx, done); err != nil {
		return 0, 0, err
	}
	return enqueue, time.Since(start), nil
}
