package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// CrashFlow is the crash-resume scenario's workflow: WorkflowSteps durable
// steps that each work for crashStepWork.
type CrashFlow struct{}

// Kind names the job type.
func (CrashFlow) Kind() string { return "bench.crashflow" }

const (
	// crashStepWork is how long each step of a CrashFlow works.
	crashStepWork = 20 * time.Millisecond
	// crashKillAfter is the step after whose checkpoint the worker
	// process is killed: half the workflow is done.
	crashKillAfter = WorkflowSteps/2 - 1
	// crashPoll is how often the benchmark looks whether the resumed
	// workflow's completion was acked.
	crashPoll = 5 * time.Millisecond
)

// crashSample is one kill and resumption.
type crashSample struct {
	// ReclaimSeconds: from the SIGKILL to the standby worker starting the
	// workflow again (the lease expired, a reaper put the job back, the
	// standby claimed it).
	ReclaimSeconds float64 `json:"reclaim_seconds"`
	// FinishSeconds: from then to the workflow's completion acked (the
	// remaining steps run).
	FinishSeconds float64 `json:"finish_seconds"`
	// ResumeSeconds is the two together: kill to completion.
	ResumeSeconds float64 `json:"resume_seconds"`
	// StepsRerun is how many step functions the standby ran: the steps
	// not checkpointed when the process died.
	StepsRerun int `json:"steps_rerun"`
	// CrashAttempt is the job's crash_attempt once completed: 1, the lost
	// lease.
	CrashAttempt int `json:"crash_attempt"`
}

// crashResult is the crash-resume scenario's report.
type crashResult struct {
	Steps         int           `json:"steps_per_workflow"`
	StepWorkMS    float64       `json:"step_work_ms"`
	KilledAfter   int           `json:"killed_after_steps"`
	LeaseSeconds  float64       `json:"lease_seconds"`
	ReapEverySecs float64       `json:"maintenance_interval_seconds"`
	Samples       []crashSample `json:"samples"`
	// Nearest-rank medians and maxima over the samples.
	ResumeP50  float64 `json:"resume_p50_seconds"`
	ResumeMax  float64 `json:"resume_max_seconds"`
	ReclaimP50 float64 `json:"reclaim_p50_seconds"`
	FinishP50  float64 `json:"finish_p50_seconds"`
}

// runCrashResume runs cfg.CrashSamples times: a 10-step workflow starts in
// a worker child process, which is SIGKILLed once half the steps are
// checkpointed; a standby worker in this process resumes it. It measures
// the time from the kill to the workflow's completion.
func runCrashResume(ctx context.Context, t *target, cfg config) (*crashResult, error) {
	res := &crashResult{
		Steps: WorkflowSteps, StepWorkMS: Millis(crashStepWork), KilledAfter: crashKillAfter + 1,
		LeaseSeconds: cfg.Lease.Seconds(), ReapEverySecs: (cfg.Lease / 4).Seconds(),
	}
	for i := range cfg.CrashSamples {
		t.progress("crash-resume: sample %d of %d, lease %s", i+1, cfg.CrashSamples, cfg.Lease)
		s, err := crashOnce(ctx, t, cfg)
		if err != nil {
			return res, fmt.Errorf("sample %d: %w", i+1, err)
		}
		res.Samples = append(res.Samples, s)
	}
	pick := func(f func(crashSample) float64) []float64 {
		v := make([]float64, len(res.Samples))
		for i, s := range res.Samples {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v
	}
	median := func(v []float64) float64 { return v[(len(v)-1)/2] }
	resume := pick(func(s crashSample) float64 { return s.ResumeSeconds })
	res.ResumeP50, res.ResumeMax = median(resume), resume[len(resume)-1]
	res.ReclaimP50 = median(pick(func(s crashSample) float64 { return s.ReclaimSeconds }))
	res.FinishP50 = median(pick(func(s crashSample) float64 { return s.FinishSeconds }))
	return res, nil
}

// crashOnce is one sample, in a namespace of its own.
func crashOnce(ctx context.Context, t *target, cfg config) (s crashSample, err error) {
	ns := newNamespace("crash")
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()
	maintenance := cfg.Lease / 4
	proc, err := startChild(ctx, childConfig{
		Role: roleCrash, URL: t.url, NS: ns, Partitions: t.partitions, Concurrency: 1,
		Lease: cfg.Lease, Maintenance: maintenance, StepWork: crashStepWork,
	}, t.stderr)
	if err != nil {
		return s, err
	}
	defer proc.kill()

	var (
		started  atomic.Int64 // UnixNano of the standby's handler start
		reruns   atomic.Int64
		once     sync.Once
		finished = make(chan struct{})
	)
	reg := flow.NewRegistry()
	if err := registerCrashFlow(reg, crashStepWork, crashHooks{
		started: func() { started.CompareAndSwap(0, time.Now().UnixNano()) },
		ran:     func(int) { reruns.Add(1) },
		checkpointed: func(i int) {
			if i == WorkflowSteps-1 {
				once.Do(func() { close(finished) })
			}
		},
	}); err != nil {
		return s, err
	}
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return s, err
	}
	job, err := client.Enqueue(ctx, CrashFlow{})
	if err != nil {
		return s, err
	}
	// The child holds the job once its first step is checkpointed: only
	// then does the standby start, so it cannot take the job first.
	if _, err := proc.await(ctx, func(line string) bool { return line == "step 0" }); err != nil {
		return s, fmt.Errorf("waiting for the first step: %w", err)
	}
	opts := t.workerOptions(ns, 1, false)
	opts.Lease, opts.MaintenanceInterval = cfg.Lease, maintenance
	standby, err := startWorker(ctx, t, reg, opts)
	if err != nil {
		return s, err
	}
	defer standby.stop()
	last := "step " + strconv.Itoa(crashKillAfter)
	if _, err := proc.await(ctx, func(line string) bool { return line == last }); err != nil {
		return s, fmt.Errorf("waiting for step %d: %w", crashKillAfter, err)
	}
	proc.kill()
	killed := time.Now()

	select {
	case <-finished:
	case <-ctx.Done():
		return s, fmt.Errorf("waiting for the resumed workflow: %w", context.Cause(ctx))
	}
	info, err := awaitState(ctx, client, job.ID, flow.StateCompleted)
	if err != nil {
		return s, err
	}
	done := time.Now()
	resumed := time.Unix(0, started.Load())
	s = crashSample{
		ReclaimSeconds: resumed.Sub(killed).Seconds(), FinishSeconds: done.Sub(resumed).Seconds(),
		ResumeSeconds: done.Sub(killed).Seconds(), StepsRerun: int(reruns.Load()), CrashAttempt: info.CrashAttempt,
	}
	if max := WorkflowSteps - crashKillAfter - 1; s.StepsRerun > max {
		return s, fmt.Errorf("the standby ran %d step functions, but %d steps were checkpointed before the kill: at most %d should run again",
			s.StepsRerun, crashKillAfter+1, max)
	}
	return s, nil
}

// awaitState polls job id until it is in state.
func awaitState(ctx context.Context, client *flow.Client, id, state string) (*flow.JobInfo, error) {
	for {
		info, err := client.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		if info.State == state {
			return info, nil
		}
		if err := Sleep(ctx, crashPoll); err != nil {
			return nil, fmt.Errorf("waiting for job %s to be %s (it is %s): %w", id, state, info.State, err)
		}
	}
}

func (c *crashResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Crash-resume: a %d-step workflow (%.0fms of work per step) whose worker process is SIGKILLed after step %d;\n",
		c.Steps, c.StepWorkMS, c.KilledAfter)
	fmt.Fprintf(w, "  a standby worker resumes it; lease %gs, reaper every %gs; %d samples\n",
		c.LeaseSeconds, c.ReapEverySecs, len(c.Samples))
	fmt.Fprintf(w, "  kill to completion: p50 %.3fs, max %.3fs; kill to reclaimed p50 %.3fs, reclaimed to completed p50 %.3fs\n",
		c.ResumeP50, c.ResumeMax, c.ReclaimP50, c.FinishP50)
	reruns := make([]string, len(c.Samples))
	for i, s := range c.Samples {
		reruns[i] = strconv.Itoa(s.StepsRerun)
	}
	fmt.Fprintf(w, "  step functions run again per sample: %v (the steps not checkpointed at the kill)\n", reruns)
}
