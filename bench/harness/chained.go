package harness

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/flow"
)

// Chain is one link of the chained workflow: the job of step K, which
// enqueues the job of step K+1.
type Chain struct {
	K int
}

// Kind names the job type.
func (Chain) Kind() string { return "bench.chain" }

// chainedResult is the chained scenario's report: the workflow scenario's
// workflow written without durable steps, as the baseline it is compared
// with.
type chainedResult struct {
	Workflows   int `json:"workflows"`
	Jobs        int `json:"jobs_per_workflow"`
	Concurrency int `json:"concurrency"`
	// Seconds runs from the first enqueue to the last job acked.
	Seconds         float64 `json:"seconds"`
	WorkflowsPerSec float64 `json:"workflows_per_sec"`
	JobsPerSec      float64 `json:"jobs_per_sec"`
	// Redis is the cost of one workflow (its ten jobs). The handlers
	// enqueue the next job on the worker's Redis client, so those
	// enqueues count as worker round trips, as a step's checkpoint does.
	Redis redisCost `json:"redis_per_workflow"`
	// CPUBoundPerSec is as for the workflow scenario.
	CPUBoundPerSec float64 `json:"cpu_bound_workflows_per_sec"`
}

// runChained runs cfg.Workflows chains of WorkflowSteps plain jobs: the
// producers enqueue the first job of each chain, each job's handler
// enqueues the next one with a client of its own, and the last one counts
// the workflow finished. Timed like the workflow scenario.
func runChained(ctx context.Context, t *target, cfg config) (*chainedResult, error) {
	t.progress("chained: %d chains of %d jobs", cfg.Workflows, WorkflowSteps)
	m, err := runRig(ctx, t, cfg, "chained", Chain{}, func(r *rig) error {
		// The worker process's own client, as a handler would have.
		next, err := flow.NewClient(t.worker.UniversalClient, t.clientOptions(r.opts.Namespace, r.reg))
		if err != nil {
			return err
		}
		return flow.Register(r.reg, func(ctx context.Context, job *flow.Job[Chain]) error {
			if k := job.Args.K + 1; k < WorkflowSteps {
				if _, err := next.Enqueue(ctx, Chain{K: k}); err != nil {
					return fmt.Errorf("enqueueing step %d: %w", k, err)
				}
				return nil
			}
			r.done.Tick()
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	n := cfg.Workflows
	res := &chainedResult{
		Workflows: n, Jobs: WorkflowSteps, Concurrency: cfg.Concurrency,
		Seconds: m.process.Seconds(), WorkflowsPerSec: float64(n) / m.process.Seconds(),
		JobsPerSec: float64(n*WorkflowSteps) / m.process.Seconds(),
		Redis:      costSince(m.before, m.after, n),
	}
	res.CPUBoundPerSec = res.Redis.cpuBound()
	return res, nil
}
