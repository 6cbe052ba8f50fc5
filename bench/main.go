// Command bench measures Sluice on a real Redis: job throughput (enqueue
// and processing rates, and what each job costs Redis in commands, CPU and
// round trips), what rate classes and concurrency keys that never bind cost
// it, enqueue-to-handler latency, workflows of durable steps
// against the same workflow as chained jobs, and a fan-out to many
// children joined by their parent.
//
// Without -redis (or REDIS_URL) it starts a private redis-server on a free
// port and stops it at exit. Every run uses a fresh namespace, so it never
// collides with other data on a shared Redis, and deletes its keys there
// afterwards.
//
//	go run ./bench                             # every scenario, table on stdout
//	go run ./bench -scenario latency           # one scenario
//	go run ./bench -scenario limits            # flow control vs none
//	go run ./bench -scenario workflow,chained  # durable steps vs chained jobs
//	go run ./bench -json bench.json            # also write the figures as JSON
//	go run ./bench -json - 2>table.txt         # JSON on stdout, table on stderr
//	go run ./bench -cpuprofile cpu.out         # profile the benchmark process
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
	Workflows   int           `json:"workflows"`
	Children    int           `json:"children"`
	Timeout     time.Duration `json:"timeout_ns"`
}

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
	flag.StringVar(&names, "scenario", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run")
	flag.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL (default $REDIS_URL; empty: start a private redis-server)")
	flag.StringVar(&jsonPath, "json", "", `write the results as JSON to this file ("-": stdout, the table then goes to stderr)`)
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark process to this file")
	flag.IntVar(&cfg.Jobs, "jobs", 20000, "throughput, limits: jobs per run")
	flag.IntVar(&cfg.Producers, "producers", 16, "throughput, limits: concurrent producer goroutines")
	flag.IntVar(&cfg.Batch, "batch", 100, "throughput, limits: jobs per EnqueueMany call")
	flag.IntVar(&cfg.Concurrency, "concurrency", 50, "worker Concurrency")
	flag.IntVar(&cfg.Rate, "rate", 500, "latency: jobs enqueued per second")
	flag.DurationVar(&cfg.Duration, "duration", 5*time.Second, "latency: how long to enqueue")
	flag.IntVar(&cfg.Workflows, "workflows", 2000, "workflow, chained: workflows per run")
	flag.IntVar(&cfg.Children, "children", 10000, "fanout: children of the parent")
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

	if rep.Workflow != nil && rep.Chained != nil && rep.Chained.WorkflowsPerSec > 0 {
		rep.WorkflowVsChained = rep.Workflow.WorkflowsPerSec / rep.Chained.WorkflowsPerSec
		if rep.Chained.CPUBoundPerSec > 0 {
			rep.WorkflowVsChainedCPUBound = rep.Workflow.CPUBoundPerSec / rep.Chained.CPUBoundPerSec
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
			return fmt.Errorf("-scenario: unknown scenario %q (known: %s)", name, strings.Join(scenarioNames(), ", "))
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
		"concurrency": c.Concurrency, "rate": c.Rate, "workflows": c.Workflows,
		"children": c.Children,
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
