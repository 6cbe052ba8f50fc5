// Command peers runs the scenarios of the Sluice benchmark program
// (github.com/sluicehq/sluice/bench) side by side with the same scenarios
// written for asynq (github.com/hibiken/asynq), on the same Redis in the
// same run, and prints the medians and how many times Sluice is ahead, so
// that anyone can check the project's claims on their own machine.
//
// The Sluice side is the Sluice program itself, built from this checkout
// and run as a subprocess; the asynq side runs here, measured the same
// way: same job counts, producers, concurrency, rates and clocks. Rounds
// of both sides alternate, to spread a shared machine's noise over both.
//
// Without -redis (or REDIS_URL) it starts a private redis-server on a
// free port and stops it at exit. Each run uses fresh keys (a Sluice
// namespace, an asynq queue) and deletes them afterwards.
//
//	cd bench/peers && go run .                  # every scenario, 3 rounds
//	go run . -scenario workflow -rounds 5       # one scenario
//	go run . -json peers.json                   # also write the figures as JSON
//	go run . -v                                 # also show the Sluice program's tables
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
)

// config is the run's parameters, set by flags; the sizes are the Sluice
// program's flags of the same names, with the same defaults.
type config struct {
	Scenarios []string `json:"scenarios"`
	Rounds    int      `json:"rounds"`
	// Sizes are the Sluice program's flags, given to it as they are;
	// encoding/json flattens them into config.
	harness.Sizes
	// TunedCheck is the tuned asynq setup's TaskCheckInterval; 0 runs
	// asynq's defaults alone.
	TunedCheck time.Duration `json:"asynq_tuned_task_check_interval_ns"`
}

// scenario is one comparison: the Sluice program's scenarios and the
// asynq side's counterpart.
type scenario struct {
	name   string
	sluice []string
	asynq  func(ctx context.Context, t *target, cfg config, setup asynqSetup) (figures, error)
}

var scenarios = []scenario{
	{"throughput", []string{"throughput"}, asynqThroughput},
	{"latency", []string{"latency"}, asynqLatency},
	{"workflow", []string{"workflow", "chained"}, asynqChained},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg       config
		names     string
		redisURL  string
		jsonPath  string
		sluiceBin string
		verbose   bool
	)
	all := make([]string, len(scenarios))
	for i, s := range scenarios {
		all[i] = s.name
	}
	flag.StringVar(&names, "scenario", strings.Join(all, ","), "comma-separated scenarios to compare")
	flag.StringVar(&redisURL, "redis", os.Getenv("REDIS_URL"), "Redis URL (default $REDIS_URL; empty: start a private redis-server)")
	flag.StringVar(&jsonPath, "json", "", `write the results as JSON to this file ("-": stdout, the table then goes to stderr)`)
	flag.StringVar(&sluiceBin, "sluice-bin", "", "a built Sluice benchmark program to run (default: build it from this checkout)")
	flag.BoolVar(&verbose, "v", false, "show the Sluice program's own tables and progress")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "rounds of each scenario (Sluice and asynq alternating); medians are reported")
	cfg.Sizes.AddFlags(flag.CommandLine)
	// The Sluice program's defaults, with this program's usage texts.
	for name, usage := range map[string]string{
		"jobs":        "throughput: jobs per run",
		"producers":   "throughput, workflow: concurrent producer goroutines",
		"batch":       "throughput, workflow: Sluice's jobs per EnqueueMany call (asynq has no batch enqueue)",
		"concurrency": "worker (server) Concurrency",
		"workflows":   "workflow: workflows per run",
		"timeout":     "hard time limit of each scenario run",
	} {
		flag.Lookup(name).Usage = usage
	}
	flag.DurationVar(&cfg.TunedCheck, "asynq-tuned", time.Millisecond, "TaskCheckInterval of the tuned asynq setup (0: asynq's defaults only)")
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if sluiceBin == "" {
		dir, err := os.MkdirTemp("", "sluice-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		progress("building the Sluice benchmark program")
		if sluiceBin, err = buildSluice(ctx, dir); err != nil {
			return err
		}
	}
	t, err := connect(ctx, redisURL, cfg.Producers)
	if err != nil {
		return err
	}
	defer t.close()

	var log io.Writer = io.Discard
	if verbose {
		log = os.Stderr
	}
	rep := newReport(ctx, t, cfg)
	compare(ctx, t, cfg, sluiceBin, log, rep)
	rep.finish()

	var table io.Writer = os.Stdout
	if jsonPath == "-" {
		table = os.Stderr
	}
	rep.writeTable(table)
	if jsonPath != "" {
		if err := harness.WriteJSON(rep, jsonPath, os.Stdout); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d run(s) failed", len(rep.Errors))
	}
	return nil
}

// setups are the asynq configurations measured: its defaults, and a
// TaskCheckInterval of cfg.TunedCheck unless that is 0.
func (c config) setups() []asynqSetup {
	s := []asynqSetup{{Name: "asynq default"}}
	if c.TunedCheck > 0 {
		s = append(s, asynqSetup{Name: "asynq tuned", TaskCheckInterval: c.TunedCheck})
	}
	return s
}

// sluiceSide names the Sluice program's figures in the report.
const sluiceSide = "sluice"

// compare runs cfg.Rounds rounds of each chosen scenario. In a round each
// side runs once, Sluice first in even rounds and last in odd ones. A
// failed run is recorded in rep.Errors and the others go on.
func compare(ctx context.Context, t *target, cfg config, sluiceBin string, log io.Writer, rep *report) {
	for _, s := range scenarios {
		if !slices.Contains(cfg.Scenarios, s.name) {
			continue
		}
		type side struct {
			name string
			run  func() (figures, error)
		}
		sides := []side{{sluiceSide, func() (figures, error) {
			return runSluice(ctx, sluiceBin, t.url, cfg, log, s.sluice...)
		}}}
		for _, setup := range cfg.setups() {
			sides = append(sides, side{setup.Name, func() (figures, error) {
				ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				defer cancel()
				return s.asynq(ctx, t, cfg, setup)
			}})
		}
		for round := range cfg.Rounds {
			order := slices.Clone(sides)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, sd := range order {
				if ctx.Err() != nil {
					return
				}
				figs, err := sd.run()
				if err != nil {
					fmt.Fprintf(os.Stderr, "peers: %s, round %d, %s: %v\n", s.name, round+1, sd.name, err)
					rep.Errors = append(rep.Errors, fmt.Sprintf("%s, round %d, %s: %v", s.name, round+1, sd.name, err))
					continue
				}
				rep.add(sd.name, figs)
			}
		}
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
		if !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.name == name }) {
			return fmt.Errorf("-scenario: unknown scenario %q (known: throughput, latency, workflow)", name)
		}
		c.Scenarios = append(c.Scenarios, name)
	}
	if len(c.Scenarios) == 0 {
		return errors.New("-scenario: no scenario given")
	}
	return nil
}

func (c *config) validate() error {
	if c.Rounds <= 0 {
		return fmt.Errorf("-rounds %d must be positive", c.Rounds)
	}
	if err := c.Sizes.Validate(); err != nil {
		return err
	}
	if c.TunedCheck < 0 {
		return errors.New("-asynq-tuned must not be negative")
	}
	return nil
}

// progress tells the person waiting what is running (on stderr, so it
// never mixes with the table or JSON on stdout).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "· "+format+"\n", args...)
}
