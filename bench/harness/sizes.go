package harness

import (
	"flag"
	"strconv"
	"time"
)

// Sizes are the run sizes that the bench program takes from flags and
// that bench/peers, which runs the program for its Sluice side, takes from
// flags of the same names and defaults and passes on with Args.
type Sizes struct {
	// Jobs is how many jobs a throughput run enqueues and processes.
	Jobs int `json:"jobs"`
	// Producers is how many goroutines enqueue at once, each sending
	// EnqueueMany calls of Batch jobs.
	Producers int `json:"producers"`
	Batch     int `json:"batch"`
	// Concurrency is the worker's.
	Concurrency int `json:"concurrency"`
	// Rate is the latency scenario's jobs per second, sent for Duration.
	Rate     int           `json:"rate"`
	Duration time.Duration `json:"duration_ns"`
	// Workflows is how many workflows the workflow and chained scenarios
	// run.
	Workflows int `json:"workflows"`
	// Timeout bounds each scenario.
	Timeout time.Duration `json:"timeout_ns"`
}

// AddFlags defines the flags that set s on fs, with the bench program's
// defaults and usage texts.
func (s *Sizes) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.Jobs, "jobs", 20000, "throughput, limits: jobs per run")
	fs.IntVar(&s.Producers, "producers", 16, "throughput, limits, memory, soak, signal, sleep: concurrent producer goroutines")
	fs.IntVar(&s.Batch, "batch", 100, "throughput, limits, memory, soak, signal, sleep: jobs per EnqueueMany call")
	fs.IntVar(&s.Concurrency, "concurrency", 50, "worker Concurrency")
	fs.IntVar(&s.Rate, "rate", 500, "latency: jobs enqueued per second; signal: signals sent per second")
	fs.DurationVar(&s.Duration, "duration", 5*time.Second, "latency: how long to enqueue; signal: how long to send (rate × duration workflows wait)")
	fs.IntVar(&s.Workflows, "workflows", 2000, "workflow, chained: workflows per run")
	fs.DurationVar(&s.Timeout, "timeout", 2*time.Minute, "hard time limit of each scenario (soak, sleep: 10 times that)")
}

// Args are the bench program's command-line flags that set s.
func (s Sizes) Args() []string {
	itoa := strconv.Itoa
	return []string{
		"-jobs", itoa(s.Jobs), "-producers", itoa(s.Producers), "-batch", itoa(s.Batch),
		"-concurrency", itoa(s.Concurrency), "-rate", itoa(s.Rate),
		"-duration", s.Duration.String(), "-workflows", itoa(s.Workflows),
		"-timeout", s.Timeout.String(),
	}
}

// Validate returns a *UsageError naming the first flag of s that is not
// positive.
func (s Sizes) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"jobs", s.Jobs}, {"producers", s.Producers}, {"batch", s.Batch},
		{"concurrency", s.Concurrency}, {"rate", s.Rate}, {"workflows", s.Workflows},
	} {
		if f.v <= 0 {
			return usagef("-%s %d must be positive", f.name, f.v)
		}
	}
	if s.Duration <= 0 || s.Timeout <= 0 {
		return usagef("-duration and -timeout must be positive")
	}
	return nil
}
