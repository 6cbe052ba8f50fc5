package main

import (
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/internal/redisproc"
)

// report is everything one invocation measured; it is what -json writes.
type report struct {
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Go         string    `json:"go"`
	Platform   string    `json:"platform"`
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	// LoadStart and LoadEnd are the machine's 1, 5 and 15 minute load
	// averages before the first run and after the last.
	LoadStart string       `json:"load_average_start"`
	LoadEnd   string       `json:"load_average_end"`
	Redis     redisInfo    `json:"redis"`
	Asynq     string       `json:"asynq_version"`
	Config    config       `json:"config"`
	Setups    []asynqSetup `json:"asynq_setups"`
	// Samples holds every run's figures: by side ("sluice", then each
	// asynq setup's name), by figure, one value per round.
	Samples map[string]map[string][]float64 `json:"samples"`
	Lines   []line                          `json:"comparisons"`
	Errors  []string                        `json:"errors,omitempty"`
}

// redisInfo says which Redis was measured.
type redisInfo struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	// External: a Redis this program did not start, which other clients
	// may have been using at the same time.
	External bool `json:"external"`
}

// line is one comparison's result: medians over the rounds.
type line struct {
	comparison
	SluiceMedian float64            `json:"sluice_median"`
	AsynqMedian  map[string]float64 `json:"asynq_median"`
	// Advantage is how many times better Sluice's median is than each
	// asynq setup's (above 1: Sluice ahead).
	Advantage map[string]float64 `json:"sluice_advantage"`
	// Meets says whether Sluice is ahead by Target or more against every
	// asynq setup; absent for lines without a target.
	Meets *bool `json:"meets_target,omitempty"`
}

func newReport(ctx context.Context, t *target, cfg config) *report {
	return &report{
		Started: time.Now(), Go: goruntime.Version(), Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
		CPUs: goruntime.NumCPU(), GOMAXPROCS: goruntime.GOMAXPROCS(0), LoadStart: loadAverage(),
		Redis:  redisInfo{Addr: t.addr, Version: harness.RedisVersion(ctx, t.admin), External: t.server == nil || os.Getenv(redisproc.EnvExternalAddr) != ""},
		Asynq:  asynqVersion(),
		Config: cfg, Setups: cfg.setups(), Samples: map[string]map[string][]float64{},
	}
}

// asynqVersion is the asynq module version this program was built with.
func asynqVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/hibiken/asynq" {
				return m.Version
			}
		}
	}
	return "unknown"
}

// add records one run of side.
func (r *report) add(side string, figs figures) {
	if r.Samples[side] == nil {
		r.Samples[side] = map[string][]float64{}
	}
	for k, v := range figs {
		r.Samples[side][k] = append(r.Samples[side][k], v)
	}
}

// finish computes the lines of the scenarios that ran, and the load
// average at the end.
func (r *report) finish() {
	r.Finished, r.LoadEnd = time.Now(), loadAverage()
	for _, c := range comparisons {
		s := r.Samples[sluiceSide][c.Sluice]
		if len(s) == 0 {
			continue
		}
		l := line{comparison: c, SluiceMedian: median(s), AsynqMedian: map[string]float64{}, Advantage: map[string]float64{}}
		meets := true
		for _, setup := range r.Setups {
			a := r.Samples[setup.Name][c.Asynq]
			if len(a) == 0 {
				meets = false
				continue
			}
			l.AsynqMedian[setup.Name] = median(a)
			adv := c.advantage(l.SluiceMedian, l.AsynqMedian[setup.Name])
			l.Advantage[setup.Name] = adv
			meets = meets && adv >= c.Target
		}
		if c.Target > 0 {
			l.Meets = &meets
		}
		r.Lines = append(r.Lines, l)
	}
}

// writeTable prints r for people.
func (r *report) writeTable(w io.Writer) {
	where := "started by this program"
	if r.Redis.External {
		where = "external, possibly shared"
	}
	c := r.Config
	fmt.Fprintf(w, "Sluice vs asynq %s, one Redis, %s\n", r.Asynq, r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "%s %s, %d CPUs (GOMAXPROCS %d); Redis %s at %s (%s)\n",
		r.Go, r.Platform, r.CPUs, r.GOMAXPROCS, r.Redis.Version, r.Redis.Addr, where)
	fmt.Fprintf(w, "load average (1, 5, 15 min): %s at start, %s at end; %d rounds, sides interleaved, medians shown\n",
		r.LoadStart, r.LoadEnd, c.Rounds)
	fmt.Fprintf(w, "throughput: %s no-op jobs, %d producers (Sluice: EnqueueMany batches of %d; asynq: one Enqueue per task,\n",
		harness.Thousands(float64(c.Jobs)), c.Producers, c.Batch)
	fmt.Fprintf(w, "  it has no batch enqueue), Concurrency %d; latency: %d jobs/s for %s to an idle worker;\n", c.Concurrency, c.Rate, c.Duration)
	fmt.Fprintf(w, "workflow: %s workflows of %d no-op steps, Concurrency %d\n", harness.Thousands(float64(c.Workflows)), harness.WorkflowSteps, c.Concurrency)
	var setups []string
	for _, s := range r.Setups {
		check := "1s, the default"
		if s.TaskCheckInterval > 0 {
			check = s.TaskCheckInterval.String()
		}
		setups = append(setups, fmt.Sprintf("%s: TaskCheckInterval %s", s.Name, check))
	}
	fmt.Fprintf(w, "%s; otherwise asynq's defaults\n\n", strings.Join(setups, "; "))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"scenario", "figure", "Sluice"}
	for _, s := range r.Setups {
		header = append(header, s.Name)
	}
	for _, s := range r.Setups {
		header = append(header, "Sluice × vs "+strings.TrimPrefix(s.Name, "asynq "))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "target"), "\t")+"\t")
	for _, l := range r.Lines {
		cells := []string{l.Scenario, l.Label, l.format(l.SluiceMedian)}
		for _, s := range r.Setups {
			cells = append(cells, l.format(l.AsynqMedian[s.Name]))
		}
		for _, s := range r.Setups {
			cells = append(cells, fmt.Sprintf("%.2f", l.Advantage[s.Name]))
		}
		target := ""
		if l.Meets != nil {
			verdict := "below"
			if *l.Meets {
				verdict = "meets"
			}
			target = fmt.Sprintf("≥ %g×: %s", l.Target, verdict)
		}
		fmt.Fprintln(tw, strings.Join(append(cells, target), "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w, "Sluice ×: Sluice's median over asynq's for rates, asynq's over Sluice's for latencies (above 1: Sluice ahead).")
	fmt.Fprintln(w, "Times run from the first enqueue (drain: the worker's start) to the last job acked, on both sides.")
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
}

// format prints v in the line's unit.
func (l line) format(v float64) string {
	if l.LowerBetter {
		return fmt.Sprintf("%.3fms", v)
	}
	return harness.Thousands(v) + l.Unit
}
