package harness

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
	// long: not run unless asked for by name or by "all", and given 10
	// times the -timeout.
	long bool
}

var scenarios = []scenario{
	{name: "throughput", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Throughput, err = runThroughput(ctx, t, cfg)
		return err
	}},
	{name: "limits", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Limits, err = runLimits(ctx, t, cfg)
		return err
	}},
	{name: "latency", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Latency, err = runLatency(ctx, t, cfg)
		return err
	}},
	{name: "workflow", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Workflow, err = runWorkflow(ctx, t, cfg)
		return err
	}},
	{name: "chained", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Chained, err = runChained(ctx, t, cfg)
		return err
	}},
	{name: "fanout", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Fanout, err = runFanout(ctx, t, cfg)
		return err
	}},
	{name: "wait", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Wait, err = runWait(ctx, t, cfg)
		return err
	}},
	{name: "signal", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Signal, err = runSignal(ctx, t, cfg)
		return err
	}},
	{name: "memory", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Memory, err = runMemory(ctx, t, cfg)
		return err
	}},
	{name: "crash-resume", run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.CrashResume, err = runCrashResume(ctx, t, cfg)
		return err
	}},
	{name: "sleep", long: true, run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Sleep, err = runSleep(ctx, t, cfg)
		return err
	}},
	{name: "soak", long: true, run: func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Soak, err = runSoak(ctx, t, cfg)
		return err
	}},
}

// scenarioByName is the scenario called name, which must exist.
func scenarioByName(name string) scenario {
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	panic("harness: no scenario " + name)
}

// defaultScenarios lists the scenarios run when -scenario is not given:
// all but the long ones.
func defaultScenarios() []string {
	var names []string
	for _, s := range scenarios {
		if !s.long {
			names = append(names, s.name)
		}
	}
	return names
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
	timeout := cfg.Timeout
	if s.long {
		timeout *= 10
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout,
		fmt.Errorf("scenario %s did not finish within its hard timeout of %s", s.name, timeout))
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
