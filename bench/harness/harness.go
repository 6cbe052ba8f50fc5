package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"
)

// UsageError is a bad command line; the flag set already printed what it
// knows about it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// config is the benchmark's parameters, set by flags.
type config struct {
	Scenarios []string `json:"scenarios"`
	// Sizes: -jobs, -producers, ... -timeout; encoding/json flattens the
	// embedded fields, so their JSON names stay at the top of config.
	Sizes
	Children int `json:"children"`
	// Partitions of the queue "default"; 0: 1 on a single Redis, 2 per
	// node on a cluster.
	Partitions int `json:"partitions"`
	// Pending and Payload: the memory scenario's job count and payload
	// bytes (of the Data field; the encoded arguments are a little longer).
	Pending int `json:"pending"`
	Payload int `json:"payload"`
	// CrashSamples and Lease: the crash-resume scenario's kills, and the
	// lease of its workers.
	CrashSamples int           `json:"crash_samples"`
	Lease        time.Duration `json:"lease_ns"`
	// SoakJobs and SoakRetention: the soak scenario's job count, and how
	// long it keeps completed jobs.
	SoakJobs      int           `json:"soak_jobs"`
	SoakRetention time.Duration `json:"soak_retention_ns"`
	// Rounds is how many times the throughput scenario runs on each
	// topology, interleaved; the median is reported.
	Rounds int `json:"rounds"`
	// StrictSteps: the workflow scenario's steps are strict (step.Strict).
	StrictSteps bool `json:"strict_steps,omitempty"`
}

// options are the flags that are not part of the report's config.
type options struct {
	cfg        config
	scenarios  string
	topologies []string
	redisURL   string
	jsonPath   string
	cpuProfile string
}

// flags parses args.
func flags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	cfg := &o.cfg
	var (
		cluster  bool
		topology string
	)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenarios, "scenario", strings.Join(defaultScenarios(), ","),
		`comma-separated scenarios to run, "all" for every one (known: `+strings.Join(scenarioNames(), ", ")+")")
	fs.StringVar(&o.redisURL, "redis", os.Getenv("REDIS_URL"),
		"Redis URL: redis://host:port or redis+cluster://host:port,... (default $REDIS_URL; empty: start a private redis-server)")
	fs.BoolVar(&cluster, "cluster", false, "start a private 3-node Redis Cluster instead of a single redis-server")
	fs.StringVar(&topology, "topology", "",
		`comma-separated Redis set-ups to run the scenarios on, one after the other: "single", "cluster" (both private); with two, also print cluster/single ratios`)
	fs.StringVar(&o.jsonPath, "json", "", `write the results as JSON to this file ("-": stdout, the table then goes to stderr)`)
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark process to this file")
	cfg.Sizes.AddFlags(fs)
	fs.IntVar(&cfg.Children, "children", 10000, "fanout: children of the parent")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "throughput: runs on each topology, interleaved across topologies; the median is reported")
	fs.IntVar(&cfg.Partitions, "partitions", 0, "partitions of the benchmark's queue (0: 1 on a single Redis, 2 per node on a cluster)")
	fs.IntVar(&cfg.Pending, "pending", 100000, "memory: delayed jobs to hold; sleep: sleeping workflows (1,000 fall due per second)")
	fs.IntVar(&cfg.Payload, "payload", 64, "memory, sleep: payload bytes per job")
	fs.IntVar(&cfg.CrashSamples, "crash-samples", 5, "crash-resume: workers killed, one per sample")
	fs.DurationVar(&cfg.Lease, "lease", time.Second, "crash-resume: lease of the workers")
	fs.IntVar(&cfg.SoakJobs, "soak-jobs", 1_000_000, "soak: no-op jobs through one worker process")
	fs.DurationVar(&cfg.SoakRetention, "soak-retention", 2*time.Second, "soak: how long completed jobs are kept")
	fs.BoolVar(&cfg.StrictSteps, "strict-steps", false, "workflow: strict steps (step.Strict: one more round trip per step, to confirm the lease)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &UsageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q", fs.Args())
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "redis" })
	if !explicit && (cluster || topology != "") {
		o.redisURL = "" // $REDIS_URL is only a default
	}
	if strings.Contains(o.redisURL, "+sentinel://") {
		return nil, usagef("-redis: a Sentinel URL; the benchmark measures one server or a cluster, so give the master's own address (redis://host:port)")
	}
	if err := cfg.setScenarios(o.scenarios); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var err error
	o.topologies, err = topologies(topology, cluster, o.redisURL)
	return o, err
}

// topologies is what -topology, -cluster and -redis ask for.
func topologies(list string, cluster bool, url string) ([]string, error) {
	var ts []string
	for t := range strings.SplitSeq(list, ",") {
		switch t = strings.TrimSpace(t); t {
		case "":
		case TopologySingle, TopologyCluster:
			if !slices.Contains(ts, t) {
				ts = append(ts, t)
			}
		default:
			return nil, usagef("-topology: unknown topology %q (known: single, cluster)", t)
		}
	}
	switch {
	case url != "" && (cluster || len(ts) > 0):
		return nil, usagef("-redis names the Redis to use: it goes with neither -cluster nor -topology")
	case url != "":
		return []string{TopologyURL}, nil
	case cluster && len(ts) > 0:
		return nil, usagef("-cluster is -topology cluster: give one of them")
	case cluster:
		return []string{TopologyCluster}, nil
	case len(ts) == 0:
		return []string{TopologySingle}, nil
	}
	return ts, nil
}

// Main runs the benchmark as the command line args (without the program
// name) says: the scenarios on each Redis set-up, a table of the results on
// stdout (or stderr with -json -), progress on stderr. It returns a
// *UsageError for a bad command line, flag.ErrHelp after printing the
// flags for -h, and an error when a scenario failed or ctx ended.
//
// Both the bench program (go run ./bench) and the sluice CLI (sluice
// bench) call it.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// Progress, worker logs and worker processes' stderr all go there.
	stderr = &syncWriter{w: stderr}
	o, err := flags(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	reps, err := runAll(ctx, o, stderr)
	if err != nil {
		return err
	}
	table := stdout
	if o.jsonPath == "-" {
		table = stderr
	}
	var (
		out    any
		failed int
	)
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(table)
		}
		rep.writeTable(table)
		failed += len(rep.Errors)
	}
	if len(reps) == 1 {
		out = reps[0]
	} else {
		cmp := compare(reps)
		cmp.writeTable(table)
		out = cmp
	}
	if o.jsonPath != "" {
		if err := WriteJSON(out, o.jsonPath, stdout); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if failed > 0 {
		return fmt.Errorf("%d scenario(s) failed", failed)
	}
	return nil
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// runAll connects to every topology, runs the throughput rounds on them
// interleaved, then the other scenarios on one topology after the other.
func runAll(ctx context.Context, o *options, stderr io.Writer) ([]*report, error) {
	var (
		targets []*target
		reps    []*report
	)
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for _, topology := range o.topologies {
		cfg := o.cfg
		t, err := connect(ctx, topology, o.redisURL, cfg.Producers, cfg.Partitions, stderr)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		cfg.Partitions = t.partitions
		reps = append(reps, &report{
			Started: time.Now(), Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
			CPUs: goruntime.NumCPU(), GOMAXPROCS: goruntime.GOMAXPROCS(0), Config: cfg,
			Topology: topology,
			Redis:    redisInfo{Addr: t.addr, Version: RedisVersion(ctx, t.admin), External: t.external, Cluster: t.cluster},
		})
	}
	if slices.Contains(o.cfg.Scenarios, "throughput") {
		runThroughputRounds(ctx, targets, reps, o.cfg)
	}
	for i, t := range targets {
		rep := reps[i]
		for _, s := range scenarios {
			if s.name == "throughput" || !slices.Contains(rep.Config.Scenarios, s.name) || ctx.Err() != nil {
				continue
			}
			if err := runScenario(ctx, s, t, rep.Config, rep); err != nil {
				fmt.Fprintf(stderr, "bench: %s: %s: %v\n", t.topology, s.name, err)
				rep.Errors = append(rep.Errors, s.name+": "+err.Error())
			}
		}
		if rep.Workflow != nil && rep.Chained != nil && rep.Chained.WorkflowsPerSec > 0 {
			rep.WorkflowVsChained = rep.Workflow.WorkflowsPerSec / rep.Chained.WorkflowsPerSec
			if rep.Chained.CPUBoundPerSec > 0 {
				rep.WorkflowVsChainedCPUBound = rep.Workflow.CPUBoundPerSec / rep.Chained.CPUBoundPerSec
			}
		}
	}
	return reps, nil
}

// setScenarios parses the -scenario list.
func (c *config) setScenarios(list string) error {
	c.Scenarios = nil
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			continue
		case name == "all":
			for _, s := range scenarioNames() {
				if !slices.Contains(c.Scenarios, s) {
					c.Scenarios = append(c.Scenarios, s)
				}
			}
			continue
		case !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.name == name }):
			return usagef("-scenario: unknown scenario %q (known: %s)", name, strings.Join(scenarioNames(), ", "))
		}
		if !slices.Contains(c.Scenarios, name) {
			c.Scenarios = append(c.Scenarios, name)
		}
	}
	if len(c.Scenarios) == 0 {
		return usagef("-scenario: no scenario given")
	}
	return nil
}

func (c *config) validate() error {
	if err := c.Sizes.Validate(); err != nil {
		return err
	}
	for name, v := range map[string]int{
		"children": c.Children, "pending": c.Pending, "crash-samples": c.CrashSamples,
		"soak-jobs": c.SoakJobs, "rounds": c.Rounds,
	} {
		if v <= 0 {
			return usagef("-%s %d must be positive", name, v)
		}
	}
	if c.Partitions < 0 || c.Partitions > 1024 {
		return usagef("-partitions %d not in 0..1024", c.Partitions)
	}
	if c.Payload < 0 {
		return usagef("-payload %d must not be negative", c.Payload)
	}
	if c.SoakRetention <= 0 {
		return usagef("-soak-retention %s must be positive", c.SoakRetention)
	}
	if c.Lease < 100*time.Millisecond {
		return usagef("-lease %s: want at least 100ms", c.Lease)
	}
	return nil
}
