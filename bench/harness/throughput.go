package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/runtime"
)

// Noop is the throughput job: it carries nothing and its handler does
// nothing, so what is measured is Sluice and Redis alone.
type Noop struct{}

// Kind names the job type.
func (Noop) Kind() string { return "bench.noop" }

// Throughput run modes.
const (
	// modeConcurrent: producers enqueue while an idle, warmed-up worker
	// processes; timed from the first enqueue to the last job acked.
	modeConcurrent = "enqueue+process"
	// modeDrain: the queue is filled first, then a worker is started on
	// it; timed from the worker's start to the last job acked.
	modeDrain = "drain"
)

// throughputRun is one run of the throughput scenario.
type throughputRun struct {
	Mode string `json:"mode"`
	// Retention is "discard" (DiscardCompleted: completed jobs are deleted
	// at once) or "keep" (the default 24h retention).
	Retention string `json:"retention"`
	// Enqueue figures: the producers' time, from the first EnqueueMany to
	// the last one returning. In drain mode no worker runs meanwhile.
	EnqueueSeconds float64 `json:"enqueue_seconds"`
	EnqueuePerSec  float64 `json:"enqueue_per_sec"`
	// Processing figures, timed as the mode says.
	ProcessSeconds  float64 `json:"process_seconds"`
	ProcessedPerSec float64 `json:"processed_per_sec"`
	// CommandsPerSec is the Redis commands (those inside scripts
	// included) run per second of processing: commands per job times
	// ProcessedPerSec.
	CommandsPerSec float64 `json:"redis_commands_per_sec"`
	// Redis is the cost per job over the whole run: enqueueing and
	// processing.
	Redis redisCost `json:"redis"`
	// In drain mode the two phases are apart, and so are their costs.
	EnqueueRedis *redisCost `json:"enqueue_redis,omitempty"`
	ProcessRedis *redisCost `json:"process_redis,omitempty"`
	// RoundsPerSec, with -rounds above 1, is every round's
	// ProcessedPerSec, in the order they ran; the run reported is the
	// median one.
	RoundsPerSec []float64 `json:"rounds_processed_per_sec,omitempty"`
}

// throughputResult is the throughput scenario's report.
type throughputResult struct {
	Jobs        int `json:"jobs"`
	Producers   int `json:"producers"`
	Batch       int `json:"batch"`
	Concurrency int `json:"concurrency"`
	// Rounds is how many times each run was made (-rounds).
	Rounds int             `json:"rounds"`
	Runs   []throughputRun `json:"runs"`
}

// runThroughput runs both modes, first discarding completed jobs (the
// headline: retention is not part of what is measured), then keeping them.
func runThroughput(ctx context.Context, t *target, cfg config) (*throughputResult, error) {
	res := &throughputResult{Jobs: cfg.Jobs, Producers: cfg.Producers, Batch: cfg.Batch, Concurrency: cfg.Concurrency, Rounds: 1}
	for _, keep := range []bool{false, true} {
		for _, mode := range []string{modeConcurrent, modeDrain} {
			run, err := throughputOnce(ctx, t, cfg, mode, keep)
			if err != nil {
				return res, fmt.Errorf("%s, %s: %w", mode, run.Retention, err)
			}
			res.Runs = append(res.Runs, run)
		}
	}
	return res, nil
}

// throughputOnce runs cfg.Jobs Noop jobs through a fresh namespace.
func throughputOnce(ctx context.Context, t *target, cfg config, mode string, keep bool) (throughputRun, error) {
	t.progress("throughput: %s, %s completed jobs", mode, retention(keep))
	run, _, err := noopRun(ctx, t, cfg, "throughput", mode, keep, nil, nil)
	return run, err
}

// retention names what happens to completed jobs: "discard"
// (DiscardCompleted) or "keep".
func retention(keep bool) string {
	if keep {
		return "keep"
	}
	return "discard"
}

// noopRun runs cfg.Jobs Noop jobs in mode through a fresh namespace named
// after name, and returns the run's figures and the samples they came
// from. itemOpts, when not nil, gives the enqueue options of the i-th job.
// check, when not nil, runs once every job was acked and the worker
// stopped, before the namespace is cleaned up, with the namespace and the
// samples; its error fails the run.
func noopRun(ctx context.Context, t *target, cfg config, name, mode string, keep bool,
	itemOpts func(i int) []flow.EnqueueOption, check func(ns string, m measured) error,
) (run throughputRun, m measured, err error) {
	run = throughputRun{Mode: mode, Retention: retention(keep)}
	ns := newNamespace(name)
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()
	r := &rig{t: t, cfg: cfg, jobs: cfg.Jobs, args: Noop{}, itemOpts: itemOpts, reg: flow.NewRegistry(), done: NewCountdown(cfg.Jobs)}
	if err := flow.Register(r.reg, func(context.Context, *flow.Job[Noop]) error {
		r.done.Tick()
		return nil
	}); err != nil {
		return run, m, err
	}
	if r.warm, err = registerWarmup(r.reg); err != nil {
		return run, m, err
	}
	if r.client, err = flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, r.reg)); err != nil {
		return run, m, err
	}
	r.opts = t.workerOptions(ns, cfg.Concurrency, !keep)

	if mode == modeDrain {
		m, err = r.drain(ctx)
	} else {
		m, err = r.concurrent(ctx)
	}
	if err != nil {
		return run, m, err
	}
	n := float64(cfg.Jobs)
	run.EnqueueSeconds, run.EnqueuePerSec = m.enqueue.Seconds(), n/m.enqueue.Seconds()
	run.ProcessSeconds, run.ProcessedPerSec = m.process.Seconds(), n/m.process.Seconds()
	run.Redis = costSince(m.before, m.after, cfg.Jobs)
	run.CommandsPerSec = run.Redis.CommandsPerJob * run.ProcessedPerSec
	if mode == modeDrain {
		enq, proc := costSince(m.before, m.filled, cfg.Jobs), costSince(m.filled, m.after, cfg.Jobs)
		run.EnqueueRedis, run.ProcessRedis = &enq, &proc
	}
	if check != nil {
		err = check(ns, m)
	}
	return run, m, err
}

// rig is one run, set up: jobs copies of args to enqueue (the i-th with
// the options itemOpts(i) when itemOpts is not nil), a fresh namespace's
// registry (whose handlers count down done), client and worker options.
// The throughput, limits, workflow and chained scenarios share it.
type rig struct {
	t        *target
	cfg      config
	jobs     int
	args     flow.Args
	itemOpts func(i int) []flow.EnqueueOption
	reg      *flow.Registry
	client   *flow.Client
	opts     runtime.Options
	done     *Countdown
	warm     <-chan struct{}
}

// measured is what a run measured: durations, and samples before, after
// and (in drain mode) between enqueueing and processing.
type measured struct {
	enqueue, process      time.Duration
	before, filled, after sample
}

// concurrent starts a worker, waits until it is idle, then times the
// producers and the worker together.
func (r *rig) concurrent(ctx context.Context) (m measured, err error) {
	w, err := startWorker(ctx, r.t, r.reg, r.opts)
	if err != nil {
		return m, err
	}
	defer w.stop()
	if err := warmUp(ctx, r.client, r.warm); err != nil {
		return m, err
	}
	if m.before, err = r.t.takeSample(ctx); err != nil {
		return m, err
	}
	start := time.Now()
	// The worker runs in its own goroutines meanwhile.
	if m.enqueue, err = produce(ctx, r.client, r.cfg, r.jobs, r.args, r.itemOpts); err != nil {
		return m, err
	}
	if err := r.finish(ctx, w, start, &m); err != nil {
		return m, err
	}
	return m, nil
}

// drain fills the queue, then starts a worker on it and times it.
func (r *rig) drain(ctx context.Context) (m measured, err error) {
	if m.before, err = r.t.takeSample(ctx); err != nil {
		return m, err
	}
	if m.enqueue, err = produce(ctx, r.client, r.cfg, r.jobs, r.args, r.itemOpts); err != nil {
		return m, err
	}
	if m.filled, err = r.t.takeSample(ctx); err != nil {
		return m, err
	}
	start := time.Now()
	w, err := startWorker(ctx, r.t, r.reg, r.opts)
	if err != nil {
		return m, err
	}
	defer w.stop()
	if err := r.finish(ctx, w, start, &m); err != nil {
		return m, err
	}
	return m, nil
}

// finish waits for every job's handler to have run, stops the worker
// (which returns once every ack is written: that is the end of the run),
// and takes the closing sample.
func (r *rig) finish(ctx context.Context, w *bgWorker, start time.Time, m *measured) (err error) {
	if err := r.done.Wait(ctx, "processing"); err != nil {
		return err
	}
	if err := w.stop(); err != nil {
		return fmt.Errorf("stopping the worker: %w", err)
	}
	m.process = time.Since(start)
	m.after, err = r.t.takeSample(ctx)
	return err
}

// produce enqueues jobs jobs with arguments args (the i-th with the options
// itemOpts(i), when itemOpts is not nil) from cfg.Producers goroutines, each
// sending EnqueueMany calls of cfg.Batch jobs, and returns how long that
// took. The first error stops every producer.
func produce(ctx context.Context, client *flow.Client, cfg config, jobs int, args flow.Args, itemOpts func(i int) []flow.EnqueueOption) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		claimed atomic.Int64 // jobs taken by a producer so far
		sent    atomic.Int64 // jobs enqueued so far
		wg      sync.WaitGroup
	)
	n, batch := int64(jobs), int64(cfg.Batch)
	start := time.Now()
	for range cfg.Producers {
		wg.Go(func() {
			items := make([]flow.Item, 0, batch)
			for {
				end := claimed.Add(batch)
				if end-batch >= n {
					return
				}
				items = items[:0]
				for i := end - batch; i < min(end, n); i++ {
					item := flow.Item{Args: args}
					if itemOpts != nil {
						item.Opts = itemOpts(int(i))
					}
					items = append(items, item)
				}
				res, err := client.EnqueueMany(ctx, items...)
				for _, r := range res {
					if err == nil { // else err names the failed jobs' causes
						err = r.Err
					}
				}
				if err != nil {
					cancel(err)
					return
				}
				sent.Add(int64(len(items)))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, fmt.Errorf("enqueueing: %w (%d of %d enqueued)", err, sent.Load(), n)
	}
	return time.Since(start), nil
}
