package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/sluicehq/sluice/bench/harness"
)

// asynqChained runs cfg.Workflows chains of harness.WorkflowSteps tasks: the
// producers enqueue the first task of each chain, each task's handler
// enqueues the next one with a client on the server's Redis client (as a
// handler in the worker process would), and the last one counts the
// workflow finished. Timed from the first enqueue to the last task acked,
// as the Sluice program times its workflow and chained scenarios.
func asynqChained(ctx context.Context, t *target, cfg config, setup asynqSetup) (out figures, err error) {
	progress("asynq (%s) chained: %d chains of %d tasks", setup.Name, cfg.Workflows, harness.WorkflowSteps)
	r := newAsynqRig(t, setup, cfg, "chained")
	defer r.close(ctx, &err)
	done := harness.NewCountdown(cfg.Workflows)
	next := asynq.NewClientFromRedisClient(t.worker)
	r.mux.HandleFunc(typeChain, func(ctx context.Context, task *asynq.Task) error {
		step, n := binary.Uvarint(task.Payload())
		if n <= 0 {
			return fmt.Errorf("%w (%d bytes): %w", errBadPayload, len(task.Payload()), asynq.SkipRetry)
		}
		if k := int(step) + 1; k < harness.WorkflowSteps {
			if _, err := next.EnqueueContext(ctx, chainTask(k), asynq.Queue(r.queue)); err != nil {
				return fmt.Errorf("enqueueing step %d: %w", k, err)
			}
			return nil
		}
		done.Tick()
		return nil
	})
	if err := r.startWarm(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := r.produce(ctx, cfg.Workflows, func(int) *asynq.Task { return chainTask(0) }); err != nil {
		return nil, err
	}
	if err := r.finish(ctx, done); err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	return figures{chainedKey: float64(cfg.Workflows) / secs}, nil
}

// chainTask is the task of step k of a chain.
func chainTask(k int) *asynq.Task {
	return asynq.NewTask(typeChain, binary.AppendUvarint(nil, uint64(k)))
}

// Names of the workflow figures: workflows per second as 10 chained
// jobs (both systems) and as one job of 10 durable steps (Sluice only).
const (
	chainedKey  = "chained workflows/s"
	workflowKey = "workflow workflows/s"
)
