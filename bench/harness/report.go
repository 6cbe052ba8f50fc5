package harness

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything one invocation measured; it is what -json writes.
type report struct {
	Started    time.Time `json:"started"`
	Go         string    `json:"go"`
	Platform   string    `json:"platform"`
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	// Topology is the Redis set-up: single, cluster (both started by the
	// benchmark) or url (given by -redis).
	Topology   string            `json:"topology"`
	Redis      redisInfo         `json:"redis"`
	Config     config            `json:"config"`
	Throughput *throughputResult `json:"throughput,omitempty"`
	Limits     *limitsResult     `json:"limits,omitempty"`
	Latency    *latencyResult    `json:"latency,omitempty"`
	Workflow   *workflowResult   `json:"workflow,omitempty"`
	Chained    *chainedResult    `json:"chained,omitempty"`
	// WorkflowVsChained is workflows/s with durable steps over workflows/s
	// as chained jobs, when both ran; ...CPUBound the same for their CPU
	// bounds, which a busy machine disturbs less.
	WorkflowVsChained         float64       `json:"workflow_vs_chained,omitempty"`
	WorkflowVsChainedCPUBound float64       `json:"workflow_vs_chained_cpu_bound,omitempty"`
	Fanout                    *fanoutResult `json:"fanout,omitempty"`
	Wait                      *waitResult   `json:"wait,omitempty"`
	Signal                    *signalResult `json:"signal,omitempty"`
	Sleep                     *sleepResult  `json:"sleep,omitempty"`
	Memory                    *memoryResult `json:"memory,omitempty"`
	CrashResume               *crashResult  `json:"crash_resume,omitempty"`
	Soak                      *soakResult   `json:"soak,omitempty"`
	Errors                    []string      `json:"errors,omitempty"`
}

// merge takes the results part holds.
func (r *report) merge(part *report) {
	if part.Throughput != nil {
		r.Throughput = part.Throughput
	}
	if part.Limits != nil {
		r.Limits = part.Limits
	}
	if part.Latency != nil {
		r.Latency = part.Latency
	}
	if part.Workflow != nil {
		r.Workflow = part.Workflow
	}
	if part.Chained != nil {
		r.Chained = part.Chained
	}
	if part.Fanout != nil {
		r.Fanout = part.Fanout
	}
	if part.Wait != nil {
		r.Wait = part.Wait
	}
	if part.Signal != nil {
		r.Signal = part.Signal
	}
	if part.Sleep != nil {
		r.Sleep = part.Sleep
	}
	if part.Memory != nil {
		r.Memory = part.Memory
	}
	if part.CrashResume != nil {
		r.CrashResume = part.CrashResume
	}
	if part.Soak != nil {
		r.Soak = part.Soak
	}
}

// redisInfo says which Redis was measured.
type redisInfo struct {
	Addr    string `json:"addr"`
	Version string `json:"version"`
	// External: a Redis the benchmark did not start, which other clients
	// may have been using at the same time (the Redis figures include
	// their commands).
	External bool `json:"external"`
	// Cluster: a Redis Cluster; the Redis figures are summed over its
	// masters.
	Cluster bool `json:"cluster"`
}

// writeTable prints r for people.
func (r *report) writeTable(w io.Writer) {
	where := "started by the benchmark"
	if r.Redis.External {
		where = "external, possibly shared"
	}
	fmt.Fprintf(w, "Sluice benchmark, %s\n", r.Started.Format(time.RFC3339))
	kind := "Redis"
	if r.Redis.Cluster {
		kind = "Redis Cluster"
	}
	fmt.Fprintf(w, "%s %s, %d CPUs (GOMAXPROCS %d); %s %s at %s (%s); topology %s, %d partition(s) per queue\n",
		r.Go, r.Platform, r.CPUs, r.GOMAXPROCS, kind, r.Redis.Version, r.Redis.Addr, where, r.Topology, r.Config.Partitions)
	if r.Throughput != nil && len(r.Throughput.Runs) > 0 {
		fmt.Fprintln(w)
		r.Throughput.writeTable(w)
	}
	if r.Limits != nil {
		fmt.Fprintln(w)
		r.Limits.writeTable(w)
	}
	if r.Latency != nil {
		fmt.Fprintln(w)
		r.Latency.writeTable(w)
	}
	if r.Workflow != nil || r.Chained != nil {
		fmt.Fprintln(w)
		r.writeWorkflows(w)
	}
	if r.Fanout != nil {
		fmt.Fprintln(w)
		r.Fanout.writeTable(w)
	}
	if r.Wait != nil {
		fmt.Fprintln(w)
		r.Wait.writeTable(w)
	}
	if r.Signal != nil {
		fmt.Fprintln(w)
		r.Signal.writeTable(w)
	}
	if r.Memory != nil {
		fmt.Fprintln(w)
		r.Memory.writeTable(w)
	}
	if r.Sleep != nil {
		fmt.Fprintln(w)
		r.Sleep.writeTable(w)
	}
	if r.CrashResume != nil {
		fmt.Fprintln(w)
		r.CrashResume.writeTable(w)
	}
	if r.Soak != nil {
		fmt.Fprintln(w)
		r.Soak.writeTable(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nERROR: %s\n", e)
	}
}

func (t *throughputResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Throughput: %d no-op jobs; %d producers, EnqueueMany batches of %d; worker Concurrency %d\n",
		t.Jobs, t.Producers, t.Batch, t.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tcompleted\tenqueue/s\tprocessed/s\ttime\tcmds/job\tcmds/s\tredis CPU/job\tGo CPU/job\tround trips/job (enq+worker)\t")
	for _, run := range t.Runs {
		c := run.Redis
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2fs\t%.1f\t%s\t%.1fµs\t%.1fµs\t%.3f (%.3f+%.3f)\t\n",
			run.Mode, run.Retention, Thousands(run.EnqueuePerSec), Thousands(run.ProcessedPerSec),
			run.ProcessSeconds, c.CommandsPerJob, Thousands(run.CommandsPerSec), c.CPUMicrosPerJob, c.GoCPUMicrosPerJob,
			c.TripsPerJob, c.ProducerTripsPerJob, c.WorkerTripsPerJob)
	}
	tw.Flush()
	fmt.Fprintf(w, "time: %s from first enqueue to last ack; %s from worker start to last ack on a pre-filled queue.\n",
		modeConcurrent, modeDrain)
	if t.Rounds > 1 {
		fmt.Fprintf(w, "Each row is the median of %d rounds, interleaved with the other topologies; processed/s of every round:\n", t.Rounds)
		for _, run := range t.Runs {
			rounds := make([]string, len(run.RoundsPerSec))
			for i, v := range run.RoundsPerSec {
				rounds[i] = Thousands(v)
			}
			fmt.Fprintf(w, "  %s, %s: %s\n", run.Mode, run.Retention, strings.Join(rounds, " "))
		}
	}
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

func (l *limitsResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Limits: drain of %d no-op jobs (completed discarded), unlimited and under limits that never bind;\n", l.Jobs)
	fmt.Fprintf(w, "  %d producers, EnqueueMany batches of %d; worker Concurrency %d; each mode %d times, interleaved, median shown\n",
		l.Producers, l.Batch, l.Concurrency, l.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tprocessed/s\tvs unlimited\truns (processed/s)\tcmds/job\tredis CPU/job\tGo CPU/job\tenqueue redis CPU/job\t")
	for _, md := range l.Modes {
		if len(md.Runs) == 0 {
			continue
		}
		runs := make([]string, len(md.Runs))
		for i, run := range md.Runs {
			runs[i] = Thousands(run.ProcessedPerSec)
		}
		vs := "-"
		if md.VsUnlimited > 0 {
			vs = fmt.Sprintf("%.3f", md.VsUnlimited)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%.1fµs (×%.2f)\t%.1fµs\t%.1fµs\t\n",
			md.Mode, Thousands(md.ProcessedPerSec), vs, strings.Join(runs, " "), md.ProcessCommandsPerJob,
			md.ProcessRedisCPUMicrosPerJob, md.RedisCPUVsUnlimited, md.ProcessGoCPUMicrosPerJob, md.EnqueueRedisCPUMicrosPerJob)
	}
	tw.Flush()
	fmt.Fprintln(w, "cmds, redis CPU (× the unlimited figure) and Go CPU per job are the drain's (claim+run+ack), of the median run.")
	for _, md := range l.Modes {
		fmt.Fprintf(w, "%s: %s\n", md.Mode, md.Options)
		if len(md.Runs) > 0 && md.Runs[md.Median].ProcessRedis != nil {
			p := md.Runs[md.Median].ProcessRedis
			fmt.Fprintf(w, "  drain commands per job: %s\n", strings.Join(p.topCalls(8), ", "))
			fmt.Fprintf(w, "  drain Redis µs per job: %s\n", strings.Join(top(p.MicrosPerJob, 8), ", "))
		}
	}
	if l.RateVsUnlimited > 0 {
		verdict := "below"
		if l.Pass {
			verdict = "meets"
		}
		fmt.Fprintf(w, "rate/unlimited %.3f, concurrency/unlimited %.3f: %s the %.2f floor\n",
			l.RateVsUnlimited, l.ConcurrencyVsUnlimited, verdict, l.Floor)
	}
}

func (l *latencyResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Latency: enqueue to handler start; %d jobs/s for %gs (%d jobs), one Enqueue per tick, idle worker\n",
		l.RatePerSec, l.DurationSeconds, l.Jobs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tp50\tp90\tp99\tmax\tmean\t")
	for _, row := range []struct {
		name string
		d    Distribution
	}{{"enqueue to handler", l.Pickup}, {"Enqueue call", l.EnqueueCall}, {"PING at this pace", l.Ping}} {
		fmt.Fprintf(tw, "%s\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t%.3fms\t\n",
			row.name, row.d.P50, row.d.P90, row.d.P99, row.d.Max, row.d.Mean)
	}
	tw.Flush()
	fmt.Fprintf(w, "the producer fell at most %.3fms behind its schedule; a PING (one round trip, the floor of an Enqueue call) is timed after the jobs\n", l.MaxSendLagMS)
}

// writeWorkflows prints the workflow and chained scenarios together.
func (r *report) writeWorkflows(w io.Writer) {
	n, conc := 0, 0
	if r.Workflow != nil {
		n, conc = r.Workflow.Workflows, r.Workflow.Concurrency
	} else {
		n, conc = r.Chained.Workflows, r.Chained.Concurrency
	}
	fmt.Fprintf(w, "Workflows: %d workflows of %d no-op steps; worker Concurrency %d, completed jobs discarded\n",
		n, WorkflowSteps, conc)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "written as\tworkflows/s\tsteps/s\ttime\tworker round trips/workflow\t/step\tcmds/workflow\tredis CPU/workflow\tGo CPU/workflow\tCPU bound\t")
	row := func(name string, perSec, stepsPerSec, secs, bound float64, c redisCost) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fs\t%.3f\t%.3f\t%.1f\t%.1fµs\t%.1fµs\t%s/s\t\n",
			name, Thousands(perSec), Thousands(stepsPerSec), secs, c.WorkerTripsPerJob,
			c.WorkerTripsPerJob/WorkflowSteps, c.CommandsPerJob, c.CPUMicrosPerJob, c.GoCPUMicrosPerJob, Thousands(bound))
	}
	if f := r.Workflow; f != nil {
		name := "durable steps of 1 job"
		if f.Strict {
			name = "strict steps of 1 job"
		}
		row(name, f.WorkflowsPerSec, f.StepsPerSec, f.Seconds, f.CPUBoundPerSec, f.Redis)
	}
	if c := r.Chained; c != nil {
		row("10 chained jobs", c.WorkflowsPerSec, c.JobsPerSec, c.Seconds, c.CPUBoundPerSec, c.Redis)
	}
	tw.Flush()
	fmt.Fprintln(w, "time: from first enqueue to last completion acked; a chained job enqueues the next on the worker's client.")
	fmt.Fprintf(w, "CPU bound: the most workflows/s %d CPUs could run at these costs, unshared (Redis on one core).\n", r.CPUs)
	if f := r.Workflow; f != nil {
		fmt.Fprintf(w, "durable steps: %.3f step-script round trips per step (by design one checkpoint script per step);\n",
			f.CheckpointTripsPerStep)
		fmt.Fprintf(w, "  worker round trips per workflow: %s\n", strings.Join(top(f.Redis.WorkerTripsByScript, 6), ", "))
	}
	if c := r.Chained; c != nil {
		fmt.Fprintf(w, "chained jobs: worker round trips per workflow: %s\n", strings.Join(top(c.Redis.WorkerTripsByScript, 6), ", "))
	}
	if r.WorkflowVsChained > 0 {
		fmt.Fprintf(w, "durable steps vs chained jobs: %.2f× the workflows/s, %.2f× the CPU bound\n",
			r.WorkflowVsChained, r.WorkflowVsChainedCPUBound)
	}
}

func (f *fanoutResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Fan-out: 1 parent spawns %s no-op children in one step (flow.Spawn), then flow.Join (CollectAll); worker Concurrency %d\n",
		Thousands(float64(f.Children)), f.Concurrency)
	fmt.Fprintf(w, "  parent enqueued to completed: %.3fs (%s children/s); the parent ran %d times\n",
		f.Seconds, Thousands(f.ChildrenPerSec), f.ParentRuns)
	fmt.Fprintf(w, "  parent started %.3fs, + spawned %.3fs, + children ran %.3fs, + parent joined %.3fs, + completion acked %.3fs\n",
		f.StartSeconds, f.SpawnSeconds, f.ChildrenSeconds, f.JoinSeconds, f.AckSeconds)
	c := f.Redis
	fmt.Fprintf(w, "  per child: %.1f cmds, Redis %.1fµs, Go %.1fµs, %.3f round trips (%.3f+%.3f); %s\n",
		c.CommandsPerJob, c.CPUMicrosPerJob, c.GoCPUMicrosPerJob, c.TripsPerJob, c.ProducerTripsPerJob,
		c.WorkerTripsPerJob, strings.Join(c.topCalls(6), ", "))
}
