// Command bench measures Sluice on a real Redis: job throughput (enqueue
// and processing rates, and what each job costs Redis in commands, CPU and
// round trips) and enqueue-to-handler latency.
//
// Without -redis (or REDIS_URL) it starts a private redis-server on a free
// port and stops it at exit. Every run uses a fresh namespace, so it never
// collides with other data on a shared Redis, and deletes its keys there
// afterwards.
//
//	go run ./bench                          # every scenario, table on stdout
//	go run ./bench -scenario latency        # one scenario
//	go run ./bench -json bench.json         # also write the figures as JSON
//	go run ./bench -json - 2>table.txt      # JSON on stdout, table on stderr
//	go run ./bench -cpuprofile cpu.out      # profile the benchmark process
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the benchmark's parameters, set by flags.
type config struct {
	Scenarios   []string      `json:"scenarios"`
	Jobs        int           `json:"jobs"`
	Producers   int           `json:"producers"`
	Batch       int           `json:"batch"`
	Concurrency int           `json:"concurrency"`
	Rate        int           `json:"rate"`
	Duration    time.Duration `json:"duration_ns"`
	Timeout     time.Duration `json:"timeout_ns"`
}

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
	{"latency", func(ctx context.Context, t *target, cfg config, r *report) (err error) {
		r.Latency, err = runLatency(ctx, t, cfg)
		return err
	}},
}

// stopGrace is how long a scenario past its timeout gets to unwind (stop
// its worker) before the benchmark gives up on it.
const stopGrace = 15 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg        config
		names      string
		redisURL   string
		jsonPath   string
		cpuProfile string
	)
	flag.StringVar(&names, "scenario", "throughput,latency", "comma-separated scenarios to run")
	flag.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL (default $REDIS_URL; empty: start a private redis-server)")
	flag.StringVar(&jsonPath, "json", "", `write the results as JSON to this file ("-": stdout, the table then goes to stderr)`)
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark process to this file")
	flag.IntVar(&cfg.Jobs, "jobs", 20000, "throughput: jobs per run")
	flag.IntVar(&cfg.Producers, "producers", 16, "throughput: concurrent producer goroutines")
	flag.IntVar(&cfg.Batch, "batch", 100, "throughput: jobs per EnqueueMany call")
	flag.IntVar(&cfg.Concurrency, "concurrency", 50, "worker Concurrency")
	flag.IntVar(&cfg.Rate, "rate", 500, "latency: jobs enqueued per second")
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "latency: how long to enqueue")
	flag.DurationVar(&cfg.Timeout, "timeout", 2*time.Minute, "hard time limit of each scenario")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if err := cfg.setScenarios(names); err != nil {
		return err
	}
	if err := cfg.validate(); err != nil {
		return err
	}

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t, err := connect(ctx, redisURL, cfg.Producers)
	if err != nil {
		return err
	}
	defer t.close()

	rep := &report{
		Started: time.Now(), Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
		CPUs: goruntime.NumCPU(), GOMAXPROCS: goruntime.GOMAXPROCS(0), Config: cfg,
		Redis: redisInfo{Addr: t.addr, Version: t.serverVersion(ctx), External: t.external},
	}
	for _, s := range scenarios {
		if !slices.Contains(cfg.Scenarios, s.name) || ctx.Err() != nil {
			continue
		}
		if err := runScenario(ctx, s, t, cfg, rep); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			rep.Errors = append(rep.Errors, s.name+": "+err.Error())
		}
	}

	var table io.Writer = os.Stdout
	if jsonPath == "-" {
		table = os.Stderr
	}
	rep.writeTable(table)
	if jsonPath != "" {
		if err := rep.writeJSON(jsonPath); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d scenario(s) failed", len(rep.Errors))
	}
	return nil
}

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
		if part.Throughput != nil {
			rep.Throughput = part.Throughput
		}
		if part.Latency != nil {
			rep.Latency = part.Latency
		}
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

// setScenarios parses the -scenario list.
func (c *config) setScenarios(list string) error {
	c.Scenarios = nil
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		known := slices.ContainsFunc(scenarios, func(s scenario) bool { return s.name == name })
		if !known {
			return fmt.Errorf("-scenario: unknown scenario %q (known: throughput, latency)", name)
		}
		c.Scenarios = append(c.Scenarios, name)
	}
	if len(c.Scenarios) == 0 {
		return errors.New("-scenario: no scenario given")
	}
	return nil
}

func (c *config) validate() error {
	for name, v := range map[string]int{
		"jobs": c.Jobs, "producers": c.Producers, "batch": c.Batch,
		"concurrency": c.Concurrency, "rate": c.Rate,
	} {
		if v <= 0 {
			return fmt.Errorf("-%s %d must be positive", name, v)
		}
	}
	if c.Duration <= 0 || c.Timeout <= 0 {
		return errors.New("-duration and -timeout must be positive")
	}
	return nil
}

// progress tells the person waiting what is running (on stderr, so it
// never mixes with the table or JSON on stdout).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "· "+format+"\n", args...)
}
