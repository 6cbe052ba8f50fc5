package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one invocation measured; it is what -json writes.
type report struct {
	Started    time.Time         `json:"started"`
	Go         string            `json:"go"`
	Platform   string            `json:"platform"`
	CPUs       int               `json:"cpus"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	Redis      redisInfo         `json:"redis"`
	Config     config            `json:"config"`
	Throughput *throughputResult `json:"throughput,omitempty"`
	Latency    *latencyResult    `json:"latency,omitempty"`
	Errors     []string          `json:"errors,omitempty"`
}

// redisInfo says which Redis was measured.
type redisInfo struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	// External: a Redis the benchmark did not start, which other clients
	// may have been using at the same time (the Redis figures include
	// their commands).
	External bool `json:"external"`
}

// writeJSON writes r, indented, to path ("-" for stdout).
func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// writeTable prints r for people.
func (r *report) writeTable(w io.Writer) {
	where := "started by the benchmark"
	if r.Redis.External {
		where = "external, possibly shared"
	}
	fmt.Fprintf(w, "Sluice benchmark, %s\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "%s %s, %d CPUs (GOMAXPROCS %d); Redis %s at %s (%s)\n",
		r.Go, r.Platform, r.CPUs, r.GOMAXPROCS, r.Redis.Version, r.Redis.Addr, where)
	if r.Throughput != nil && len(r.Throughput.Runs) > 0 {
		fmt.Fprintln(w)
		r.Throughput.writeTable(w)
	}
	if r.Latency != nil {
		fmt.Fprintln(w)
		r.Latency.writeTable(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
}

func (t *throughputResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Throughput: %d no-op jobs; %d producers, EnqueueMany batches of %d; worker Concurrency %d\n",
		t.Jobs, t.Producers, t.Batch, t.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tcompleted\tenqueue/s\tprocessed/s\ttime\tcmds/job\tredis CPU/job\tGo CPU/job\tround trips/job (enq+worker)\t")
	for _, run := range t.Runs {
		c := run.Redis
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2fs\t%.1f\t%.1fµs\t%.1fµs\t%.3f (%.3f+%.3f)\t\n",
			run.Mode, run.Retention, thousands(run.EnqueuePerSec), thousands(run.ProcessedPerSec),
			run.ProcessSeconds, c.CommandsPerJob, c.CPUMicrosPerJob, c.GoCPUMicrosPerJob,
			c.TripsPerJob, c.ProducerTripsPerJob, c.WorkerTripsPerJob)
	}
	tw.Flush()
	fmt.Fprintf(w, "time: %s from first enqueue to last ack; %s from worker start to last ack on a pre-filled queue.\n",
		modeConcurrent, modeDrain)
	fmt.Fprintln(w, "Per-job costs cover enqueue and processing; cmds include those run inside scripts;")
	fmt.Fprintln(w, "Redis CPU is the server's (one core bounds it at 1e6/µs jobs/s), Go CPU this process's.")
	for _, run := range t.Runs {
		fmt.Fprintf(w, "%s, %s: Redis commands per job: %s\n",
			run.Mode, run.Retention, strings.Join(run.Redis.topCalls(8), ", "))
		if run.EnqueueRedis != nil && run.ProcessRedis != nil {
			e, p := run.EnqueueRedis, run.ProcessRedis
			fmt.Fprintf(w, "  enqueue: %.1f cmds, Redis %.1fµs, Go %.1fµs; claim+run+ack: %.1f cmds, Redis %.1fµs, Go %.1fµs per job\n",
				e.CommandsPerJob, e.CPUMicrosPerJob, e.GoCPUMicrosPerJob,
				p.CommandsPerJob, p.CPUMicrosPerJob, p.GoCPUMicrosPerJob)
		}
	}
}

func (l *latencyResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Latency: enqueue to handler start; %d jobs/s for %gs (%d jobs), one Enqueue per tick, idle worker\n",
		l.RatePerSec, l.DurationSeconds, l.Jobs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp90\tp99\tmax\tmean\t")
	for _, row := range []struct {
		name string
		d    distribution
	}{{"enqueue to handler", l.Pickup}, {"Enqueue call", l.EnqueueCall}} {
		fmt.Fprintf(tw, "%s\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t\n",
			row.name, row.d.P50, row.d.P90, row.d.P99, row.d.Max, row.d.Mean)
	}
	tw.Flush()
	fmt.Fprintf(w, "the producer fell at most %.3fms behind its schedule\n", l.MaxSendLagMS)
}

// thousands formats v rounded to an integer with comma separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
