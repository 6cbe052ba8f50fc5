package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/step"
)

// Workflow is the workflow job: its handler runs WorkflowSteps durable
// steps that do nothing, so what is measured is the cost of the steps
// themselves.
type Workflow struct{}

// Kind names the job type.
func (Workflow) Kind() string { return "bench.workflow" }

// WorkflowSteps is the length of a workflow, as steps of one job (the
// workflow scenario) or as chained jobs (the chained scenario, and the
// asynq chains of bench/peers).
const WorkflowSteps = 10

// stepNames are the workflow's steps: "s0" to "s9".
var stepNames = func() []string {
	names := make([]string, WorkflowSteps)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	return names
}()

// workflowResult is the workflow scenario's report.
type workflowResult struct {
	Workflows   int `json:"workflows"`
	Steps       int `json:"steps_per_workflow"`
	Concurrency int `json:"concurrency"`
	// Seconds runs from the first enqueue to the last completion acked.
	Seconds         float64 `json:"seconds"`
	WorkflowsPerSec float64 `json:"workflows_per_sec"`
	StepsPerSec     float64 `json:"steps_per_sec"`
	// StepRuns is how many times a step function ran: Workflows × Steps
	// when every step ran exactly once.
	StepRuns int64 `json:"step_runs"`
	// Redis is the cost of one workflow (enqueue, claim, the steps, ack).
	Redis redisCost `json:"redis_per_workflow"`
	// CPUBoundPerSec is the most workflows per second this machine's CPUs
	// could run at that cost, had the benchmark them to itself.
	CPUBoundPerSec float64 `json:"cpu_bound_workflows_per_sec"`
	// WorkerTripsPerStep is every worker round trip (steps, claims, acks,
	// renewals, maintenance) divided by the steps run.
	WorkerTripsPerStep float64 `json:"worker_round_trips_per_step"`
	// CheckpointTripsPerStep counts the step script's round trips alone.
	// By design a step is one checkpoint script: 1.
	CheckpointTripsPerStep float64 `json:"checkpoint_round_trips_per_step"`
	// Strict: the steps were strict (-strict-steps), each confirming the
	// lease with one more round trip.
	Strict bool `json:"strict,omitempty"`
}

// runWorkflow runs cfg.Workflows Workflow jobs through an idle, warmed-up
// worker, enqueued as the throughput scenario enqueues, and times them
// from the first enqueue to the last completion.
func runWorkflow(ctx context.Context, t *target, cfg config) (*workflowResult, error) {
	t.progress("workflow: %d jobs of %d durable steps", cfg.Workflows, WorkflowSteps)
	var runs atomic.Int64
	noop := func(context.Context) error {
		runs.Add(1)
		return nil
	}
	var opts []step.Option
	if cfg.StrictSteps {
		opts = append(opts, step.Strict())
	}
	m, err := runRig(ctx, t, cfg, "workflow", Workflow{}, func(r *rig) error {
		return flow.Register(r.reg, func(ctx context.Context, _ *flow.Job[Workflow]) error {
			for _, name := range stepNames {
				if err := step.Do(ctx, name, noop, opts...); err != nil {
					return err
				}
			}
			r.done.Tick()
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	n := cfg.Workflows
	steps := float64(n * WorkflowSteps)
	res := &workflowResult{
		Workflows: n, Steps: WorkflowSteps, Concurrency: cfg.Concurrency,
		Seconds: m.process.Seconds(), WorkflowsPerSec: float64(n) / m.process.Seconds(),
		StepsPerSec: steps / m.process.Seconds(), StepRuns: runs.Load(),
		Redis: costSince(m.before, m.after, n), Strict: cfg.StrictSteps,
	}
	res.CPUBoundPerSec = res.Redis.cpuBound()
	res.WorkerTripsPerStep = float64(m.after.workerTrips-m.before.workerTrips) / steps
	res.CheckpointTripsPerStep = float64(m.after.workerScripts["step"]-m.before.workerScripts["step"]) / steps
	if res.StepRuns != int64(steps) {
		return res, fmt.Errorf("the step functions ran %d times, want %d (once per step)", res.StepRuns, int64(steps))
	}
	return res, nil
}

// runRig runs jobs copies of args (cfg.Workflows of them) in a fresh
// namespace, enqueued by the producers while an idle, warmed-up worker
// (cfg.Concurrency, completed jobs discarded) processes them. register adds
// the handlers; they must tick r.done once per workflow finished. r.opts
// is set when register runs.
func runRig(ctx context.Context, t *target, cfg config, name string, args flow.Args, register func(r *rig) error) (m measured, err error) {
	ns := newNamespace(name)
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()
	r := &rig{
		t: t, cfg: cfg, jobs: cfg.Workflows, args: args, reg: flow.NewRegistry(),
		done: NewCountdown(cfg.Workflows),
		opts: t.workerOptions(ns, cfg.Concurrency, true),
	}
	if err := register(r); err != nil {
		return m, err
	}
	if r.warm, err = registerWarmup(r.reg); err != nil {
		return m, err
	}
	if r.client, err = flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, r.reg)); err != nil {
		return m, err
	}
	return r.concurrent(ctx)
}
