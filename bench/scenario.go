package main

import (
	"context"
	"fmt"
	"time"
)

// scenario is one named measurement; it stores its result in the report,
// also when it fails part way.
type scenario struct {
	name string
	run  func(ctx context.Context, t *target, cfg config, r *report) error
}

var scenarios = []scenario{
	{"throughput", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Throughput, err = runThroughput(ctx, t, cfg)
		return err
	}},
	{"limits", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Limits, err = runLimits(ctx, t, cfg)
		return err
	}},
	{"latency", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Latency, err = runLatency(ctx, t, cfg)
		return err
	}},
	{"workflow", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Workflow, err = runWorkflow(ctx, t, cfg)
		return err
	}},
	{"chained", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Chained, err = runChained(ctx, t, cfg)
		return err
	}},
	{"fanout", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Fanout, err = runFanout(ctx, t, cfg)
		return err
	}},
}

// scenarioNames lists every scenario, in the order they run.
func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

// stopGrace is how long a scenario past its timeout gets to unwind (stop
// its worker) before the benchmark gives up on it.
const stopGrace = 15 * time.Second

// runScenario runs s under the hard timeout. A scenario stops by itself
// when its context ends; should it hang anyway (a worker that never
// returns), the benchmark abandons it after stopGrace.
func runScenario(ctx context.Context, s scenario, t *target, cfg config, rep *report) error {
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout,
		fmt.Errorf("scenario %s did not finish within its hard timeout of %s", s.name, cfg.Timeout))
	defer cancel()
	// The scenario writes its own copy of the report; it is merged only
	// once the scenario returned, so an abandoned one races with nothing.
	part := &report{}
	done := make(chan error, 1)
	go func() { done <- s.run(ctx, t, cfg, part) }()
	finish := func(err error) error {
		rep.merge(part)
		return err
	}
	select {
	case err := <-done:
		return finish(err)
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return finish(err)
	case <-time.After(stopGrace):
		return fmt.Errorf("%w; it did not stop within %s after that and was abandoned", context.Cause(ctx), stopGrace)
	}
}
