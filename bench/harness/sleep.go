package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/step"
)

// Sleeper is the sleep scenario's workflow: its handler sleeps durably
// (step.SleepUntil) until its own wake time, then notes how late it
// resumed. It carries Data, a fixed payload, as the memory scenario's
// jobs do.
type Sleeper struct {
	I    int
	Data []byte
}

// Kind names the job type.
func (Sleeper) Kind() string { return "bench.sleep" }

// sleepDuePerSec is how many sleeping workflows fall due per second: job
// i wakes i/sleepDuePerSec seconds after the first.
const sleepDuePerSec = 1000

// Issue 16's targets for sleeping workflows.
const (
	sleepMemoryBudget = 300  // bytes per sleeping job beyond payload and checkpoints
	sleepTargetLagP99 = 10.0 // ms behind the due time, at 1,000 due per second
)

// sleepTimer is the name of the workflows' sleep (step and timer).
const sleepTimer = "nap"

// sleepResult is the sleep scenario's report.
type sleepResult struct {
	Jobs        int `json:"jobs"`
	DuePerSec   int `json:"due_per_sec"`
	Concurrency int `json:"concurrency"`
	// Attempts is how many times the scenario ran: it starts over when
	// the machine turns out slower than calibrated.
	Attempts int `json:"attempts"`
	// PayloadBytes is the mean length of a job's encoded arguments
	// (msgpack of Sleeper: the index and the -payload bytes), the payload
	// Redis stores; CheckpointBytes what its finished steps hold: none,
	// as the sleep is the workflow's first step (the wait's own timer is
	// not a checkpoint: it counts as overhead).
	PayloadBytes    float64 `json:"payload_bytes"`
	CheckpointBytes float64 `json:"checkpoint_bytes"`
	// Seconds of each phase: the calibration run, enqueueing the jobs,
	// running each up to its sleep and suspending it, from then to the
	// first due time (memory measured meanwhile), from the first due time
	// to the last workflow resumed, and the whole scenario.
	CalibrateSeconds float64 `json:"calibrate_seconds"`
	EnqueueSeconds   float64 `json:"enqueue_seconds"`
	SuspendSeconds   float64 `json:"suspend_seconds"`
	IdleSeconds      float64 `json:"idle_seconds"`
	WakeSeconds      float64 `json:"wake_seconds"`
	TotalSeconds     float64 `json:"total_seconds"`
	// SuspendPerSec is the calibration's rate of suspensions, which set
	// how far ahead the first due time was put.
	SuspendPerSec float64 `json:"calibrated_suspend_per_sec"`
	// Memory is Redis's used_memory less client buffers (usedMemory),
	// each reading settled: before the jobs, once they were all enqueued
	// (ready to run, no worker yet), once all were suspended in their
	// sleep, and after they all completed (discarded).
	BaselineBytes int64 `json:"baseline_bytes"`
	ReadyBytes    int64 `json:"ready_bytes"`
	SleepingBytes int64 `json:"sleeping_bytes"`
	AfterBytes    int64 `json:"after_bytes"`
	// Per job: (reading - BaselineBytes) / Jobs, and that less
	// PayloadBytes and CheckpointBytes: what Sluice adds.
	ReadyPerJob           float64 `json:"ready_bytes_per_job"`
	ReadyBeyondPayload    float64 `json:"ready_overhead_bytes_per_job"`
	SleepingPerJob        float64 `json:"sleeping_bytes_per_job"`
	SleepingBeyondPayload float64 `json:"sleeping_overhead_bytes_per_job"`
	// CallRecordBytes is the MEMORY USAGE, per job, of the call records
	// (rc: keys, lua/lib_replay.lua) alive when the sleeping jobs were
	// measured: the replies of the enqueue, claim and ack calls, kept 60 s
	// to make re-sent calls safe. They are in SleepingPerJob (and those
	// of the enqueues in ReadyPerJob), but go once the calls are a
	// minute old; SleepingSteady is SleepingBeyondPayload without them.
	CallRecordBytes float64 `json:"call_record_bytes_per_job"`
	SleepingSteady  float64 `json:"sleeping_steady_overhead_bytes_per_job"`
	// AfterCallRecordBytes is the MEMORY USAGE of the call records alive
	// once every job completed (AfterBytes): those of the wake-ups of the
	// last minute.
	AfterCallRecordBytes int64 `json:"after_call_record_bytes"`
	// MEMORY USAGE of one job's hash, ready and sleeping, and of its steps
	// hash while sleeping (0: none; its timer is in the job's hash); the
	// rest of a job's bytes are its entry in the ready list or scheduled
	// index and the key table's.
	ReadyJobHashBytes    int64 `json:"ready_job_hash_bytes"`
	SleepingJobHashBytes int64 `json:"sleeping_job_hash_bytes"`
	StepsHashBytes       int64 `json:"steps_hash_bytes"`
	// Lag is from each job's wake time (the store's, in ms) to its
	// handler returning from step.SleepUntil (read in the handler): the
	// worker's timer, the claim that promotes and leases it, and the step
	// commit that records the sleep done. Both clocks are this host's.
	Lag Distribution `json:"lag"`
	// StartLag is the part of Lag before the handler started: the
	// worker's timer and the claim.
	StartLag Distribution `json:"start_lag"`
	// Redis is the cost of one wake-up (the promotion, claim, step commit
	// and completion ack, and the worker's background work meanwhile).
	Redis redisCost `json:"redis_per_wakeup"`
	// The targets and whether they hold: SleepingSteady against the
	// memory budget, Lag.P99 against the lag target.
	MemoryBudget int     `json:"memory_budget_bytes"`
	MemoryPass   bool    `json:"memory_pass"`
	LagTargetP99 float64 `json:"lag_target_p99_ms"`
	LagPass      bool    `json:"lag_pass"`
}

// sleepAttempts is how many times the sleep scenario may start over
// when the machine turned out slower than calibrated (the first jobs
// would fall due before the last had suspended).
const sleepAttempts = 3

// sleepRound is one attempt's state, shared with the handler.
type sleepRound struct {
	n     int
	first int64          // the first due time, Unix ms
	lags  []atomic.Int64 // ns behind the wake time past the sleep, +1 once set
	start []atomic.Int64 // the same to the handler's start
	done  *Countdown
	late  atomic.Int64 // jobs that reached their sleep after their wake time
	early atomic.Int64 // jobs that resumed before it
}

func newSleepRound(n int, first time.Time) *sleepRound {
	return &sleepRound{
		n: n, first: first.UnixMilli(), done: NewCountdown(n),
		lags: make([]atomic.Int64, n), start: make([]atomic.Int64, n),
	}
}

// wake is job i's wake time.
func (r *sleepRound) wake(i int) time.Time {
	return time.UnixMilli(r.first + int64(i)*1000/sleepDuePerSec)
}

// runSleep measures cfg.Pending Sleeper workflows: enqueued (ready to run;
// memory measured), then run by a worker up to their sleep, where they
// suspend (memory measured), then run on as they fall due, sleepDuePerSec
// per second (lag measured). The first due time is set far enough ahead
// for every job to suspend and the memory to be measured first, from the
// rate at which a calibration run of the same workflows suspended; should
// the run fall behind that, it starts over with the rate it saw.
func runSleep(ctx context.Context, t *target, cfg config) (res *sleepResult, err error) {
	began := time.Now()
	n := cfg.Pending
	res = &sleepResult{
		Jobs: n, DuePerSec: sleepDuePerSec, Concurrency: cfg.Concurrency,
		MemoryBudget: sleepMemoryBudget, LagTargetP99: sleepTargetLagP99,
	}
	data := bytes.Repeat([]byte{'x'}, cfg.Payload)
	var payload int64
	for i := range n {
		b, err := msgpack.Marshal(Sleeper{I: i, Data: data})
		if err != nil {
			return nil, err
		}
		payload += int64(len(b))
	}
	res.PayloadBytes = float64(payload) / float64(n)

	var cur atomic.Pointer[sleepRound]
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[Sleeper]) error {
		entered := time.Now()
		r, i := cur.Load(), job.Args.I
		if r == nil || i < 0 || i >= r.n {
			return fmt.Errorf("sleep scenario: job %d ran outside a round", i)
		}
		wake := r.wake(i)
		if err := step.SleepUntil(ctx, sleepTimer, wake); err != nil {
			// Suspended; had its wake time passed, it would go on at once.
			if time.Now().After(wake) {
				r.late.Add(1)
			}
			return err
		}
		lag := time.Since(wake)
		if lag < 0 {
			r.early.Add(1)
		}
		if r.lags[i].CompareAndSwap(0, int64(lag)+1) {
			r.start[i].Store(int64(entered.Sub(wake)))
			r.done.Tick()
		}
		return nil
	}); err != nil {
		return nil, err
	}

	// Calibration: a twentieth of the jobs (1,000 to 10,000) suspended in a
	// sleep an hour long, in a namespace of their own, deleted after.
	calStart := time.Now()
	cal := min(n, max(1000, min(n/20, 10000)))
	cur.Store(newSleepRound(cal, time.Now().Add(time.Hour)))
	if res.SuspendPerSec, err = calibrateSleep(ctx, t, cfg, cal, reg, data); err != nil {
		return res, fmt.Errorf("calibration: %w", err)
	}
	res.CalibrateSeconds = time.Since(calStart).Seconds()

	// Every job must suspend, and the memory be measured, before the
	// first is due: 1.5 times the calibrated time, and 3 s more; twice
	// the time seen, and 3 s more, when starting over.
	margin := min(time.Duration(1.5*float64(n)/res.SuspendPerSec*float64(time.Second)), sleepMaxMargin) + 3*time.Second
	for res.Attempts = 1; ; res.Attempts++ {
		seen, err := sleepRun(ctx, t, cfg, reg, data, margin, &cur, res)
		if err != nil || seen == 0 {
			res.TotalSeconds = time.Since(began).Seconds()
			return res, err
		}
		if res.Attempts == sleepAttempts {
			return res, fmt.Errorf("the workflows suspended at %s/s, too slowly for their wake times, %d times over", Thousands(seen), sleepAttempts)
		}
		t.progress("sleep: the workflows suspend at %s/s, too slowly for their wake times; starting over", Thousands(seen))
		margin = min(time.Duration(2*float64(n)/seen*float64(time.Second)), sleepMaxMargin) + 3*time.Second
	}
}

// sleepMaxMargin bounds how long the first due time is put off for the
// jobs to suspend.
const sleepMaxMargin = 10 * time.Minute

// sleepReserve is how long before the first due time every workflow must
// have suspended, for the memory measurement.
const sleepReserve = 2 * time.Second

// sleepRun is one attempt of the sleep scenario, the first due time margin
// after the worker's start, and fills in res. When the jobs suspend too
// slowly for their wake times it gives up at once, deleting them, and
// returns the rate of suspensions it saw.
func sleepRun(ctx context.Context, t *target, cfg config, reg *flow.Registry, data []byte, margin time.Duration,
	cur *atomic.Pointer[sleepRound], res *sleepResult) (seen float64, err error) {
	n := cfg.Pending
	ns := sixCharNamespace("s")
	defer func() { err = errors.Join(err, t.deleteNamespace(context.WithoutCancel(ctx), ns)) }()
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return 0, err
	}
	if res.BaselineBytes, err = t.settledMemory(ctx); err != nil {
		return 0, err
	}
	t.progress("sleep: %d workflows of %.0f payload bytes, enqueued, then suspended by the worker", n, res.PayloadBytes)
	start := time.Now()
	ids, err := enqueueIDs(ctx, client, cfg, n, func(i int) flow.Args { return Sleeper{I: i, Data: data} })
	if err != nil {
		return 0, err
	}
	res.EnqueueSeconds = time.Since(start).Seconds()
	if res.ReadyBytes, err = t.settledMemory(ctx); err != nil {
		return 0, err
	}
	probe, _ := keys.ParseRef(ns, ids[0])
	if res.ReadyJobHashBytes, err = t.admin.MemoryUsage(ctx, probe.Job(probe.Local), 0).Result(); err != nil {
		return 0, err
	}
	nf := float64(n)
	res.ReadyPerJob = float64(res.ReadyBytes-res.BaselineBytes) / nf
	res.ReadyBeyondPayload = res.ReadyPerJob - res.PayloadBytes

	start = time.Now()
	firstDue := start.Add(margin).Truncate(time.Millisecond)
	r := newSleepRound(n, firstDue)
	cur.Store(r)
	w, err := startWorker(ctx, t, reg, t.workerOptions(ns, cfg.Concurrency, true))
	if err != nil {
		return 0, err
	}
	defer w.stop()
	if seen, err := awaitSuspended(ctx, t, ns, n, firstDue.Add(-sleepReserve)); err != nil || seen > 0 {
		return seen, err
	}
	res.SuspendSeconds = time.Since(start).Seconds()
	t.progress("sleep: %d suspended in %.1fs; the first is due in %.1fs, then %d per second for %.0fs",
		n, res.SuspendSeconds, time.Until(firstDue).Seconds(), sleepDuePerSec, float64(n)/sleepDuePerSec)
	if res.SleepingBytes, err = t.settledMemory(ctx); err != nil {
		return 0, err
	}
	if res.SleepingJobHashBytes, err = t.admin.MemoryUsage(ctx, probe.Job(probe.Local), 0).Result(); err != nil {
		return 0, err
	}
	if res.StepsHashBytes, err = t.admin.MemoryUsage(ctx, probe.Steps(probe.Local), 0).Result(); errors.Is(err, redis.Nil) {
		res.StepsHashBytes = 0 // none: the timer is in the job's hash
	} else if err != nil {
		return 0, err
	}
	records, err := callRecordBytes(ctx, t, ns)
	if err != nil {
		return 0, err
	}
	if r.late.Load() > 0 || !time.Now().Before(firstDue) {
		return perSec(n, time.Since(start)), nil
	}
	res.SleepingPerJob = float64(res.SleepingBytes-res.BaselineBytes) / nf
	res.SleepingBeyondPayload = res.SleepingPerJob - res.PayloadBytes - res.CheckpointBytes
	res.CallRecordBytes = float64(records) / nf
	res.SleepingSteady = res.SleepingBeyondPayload - res.CallRecordBytes
	res.MemoryPass = res.SleepingSteady <= sleepMemoryBudget

	before, err := t.takeSample(ctx)
	if err != nil {
		return 0, err
	}
	res.IdleSeconds = firstDue.Sub(start).Seconds() - res.SuspendSeconds
	if err := r.done.Wait(ctx, "waiting for the workflows to wake"); err != nil {
		return 0, err
	}
	res.WakeSeconds = time.Since(firstDue).Seconds()
	if err := w.stop(); err != nil {
		return 0, fmt.Errorf("stopping the worker: %w", err)
	}
	after, err := t.takeSample(ctx)
	if err != nil {
		return 0, err
	}
	res.Redis = costSince(before, after, n)
	ds := make([]time.Duration, n)
	ss := make([]time.Duration, n)
	for i := range n {
		ds[i] = time.Duration(r.lags[i].Load() - 1)
		ss[i] = time.Duration(r.start[i].Load())
	}
	res.Lag, res.StartLag = Summarize(ds), Summarize(ss)
	res.LagPass = res.Lag.P99 <= sleepTargetLagP99
	if res.AfterBytes, err = t.settledMemory(ctx); err != nil {
		return 0, err
	}
	if res.AfterCallRecordBytes, err = callRecordBytes(ctx, t, ns); err != nil {
		return 0, err
	}
	if k := r.early.Load(); k > 0 {
		return 0, fmt.Errorf("%d workflows resumed before their wake time", k)
	}
	return 0, nil
}

// perSec is n jobs in d as a rate per second.
func perSec(n int, d time.Duration) float64 { return float64(n) / max(d, time.Millisecond).Seconds() }

// awaitSuspended polls, every 10 ms, until n jobs of namespace ns are
// scheduled, and returns 0; or, as soon as the rate since the first
// twentieth suspended says they will not all be by deadline, the rate.
func awaitSuspended(ctx context.Context, t *target, ns string, n int, deadline time.Time) (float64, error) {
	start := time.Now()
	var (
		from     time.Time
		fromJobs int64
	)
	for {
		k, err := scheduledJobs(ctx, t, ns)
		if err != nil {
			return 0, err
		}
		now := time.Now()
		if k >= int64(n) {
			return 0, nil
		}
		if from.IsZero() && k >= int64(n/20) {
			from, fromJobs = now, k
		}
		if now.After(deadline) {
			return perSec(max(int(k), 1), now.Sub(start)), nil
		}
		if !from.IsZero() && now.Sub(from) > 200*time.Millisecond && k > fromJobs {
			rate := float64(k-fromJobs) / now.Sub(from).Seconds()
			if now.Add(time.Duration(float64(int64(n)-k) / rate * float64(time.Second))).After(deadline) {
				return rate, nil
			}
		}
		if err := Sleep(ctx, 10*time.Millisecond); err != nil {
			return 0, fmt.Errorf("waiting for the workflows to suspend: %w (%d of %d scheduled)", err, k, n)
		}
	}
}

// calibrateSleep enqueues n Sleeper workflows in a namespace of their
// own, times a worker suspending them all (the handlers' round has them
// sleep for an hour), deletes them, and returns the suspensions per
// second.
func calibrateSleep(ctx context.Context, t *target, cfg config, n int, reg *flow.Registry, data []byte) (float64, error) {
	t.progress("sleep: calibrating with %d workflows", n)
	ns := sixCharNamespace("c")
	defer func() { _ = t.deleteNamespace(context.WithoutCancel(ctx), ns) }()
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return 0, err
	}
	if _, err := enqueueIDs(ctx, client, cfg, n, func(i int) flow.Args { return Sleeper{I: i, Data: data} }); err != nil {
		return 0, err
	}
	start := time.Now()
	w, err := startWorker(ctx, t, reg, t.workerOptions(ns, cfg.Concurrency, true))
	if err != nil {
		return 0, err
	}
	// The rate from the first tenth suspended to the last, so that the
	// worker's start is left out; from the start if the polls saw too
	// little of the way.
	var (
		from     time.Time
		fromJobs int64
	)
	for {
		k, err := scheduledJobs(ctx, t, ns)
		if err == nil && from.IsZero() && k >= int64(n/10) {
			from, fromJobs = time.Now(), k
		}
		if err == nil && k >= int64(n) {
			break
		}
		if err == nil {
			err = Sleep(ctx, 5*time.Millisecond)
		}
		if err != nil {
			return 0, errors.Join(err, w.stop())
		}
	}
	end := time.Now()
	if err := w.stop(); err != nil {
		return 0, err
	}
	if fromJobs > int64(n/2) {
		return float64(n) / end.Sub(start).Seconds(), nil
	}
	return float64(int64(n)-fromJobs) / end.Sub(from).Seconds(), nil
}

// callRecordBytes is the MEMORY USAGE of namespace ns's call records (rc:
// keys), summed over the nodes.
func callRecordBytes(ctx context.Context, t *target, ns string) (int64, error) {
	var total atomic.Int64
	err := scanBatches(ctx, t.admin, "{"+ns+":*}:rc:*", func(ctx context.Context, c *redis.Client, batch []string) error {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.MemoryUsage(ctx, k, 0)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, cmd := range cmds {
			if v, err := cmd.(*redis.IntCmd).Result(); err == nil {
				total.Add(v)
			}
		}
		return nil
	})
	return total.Load(), err
}

func (r *sleepResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Sleep: %s workflows in step.SleepUntil, %.1f payload bytes each (no checkpoint before the sleep), due %s per second; worker Concurrency %d\n",
		Thousands(float64(r.Jobs)), r.PayloadBytes, Thousands(float64(r.DuePerSec)), r.Concurrency)
	fmt.Fprintf(w, "  time: calibration %.1fs (%s suspended/s), enqueue %.1fs, suspend %.1fs, idle until the first due %.1fs, wake-ups %.1fs; %.1fs in all, %d attempt(s)\n",
		r.CalibrateSeconds, Thousands(r.SuspendPerSec), r.EnqueueSeconds, r.SuspendSeconds, r.IdleSeconds, r.WakeSeconds, r.TotalSeconds, r.Attempts)
	fmt.Fprintf(w, "  memory (used_memory less client buffers): ready %.1f bytes per job, %.1f beyond the payload (job hash %d); sleeping %.1f per job, %.1f beyond the payload\n",
		r.ReadyPerJob, r.ReadyBeyondPayload, r.ReadyJobHashBytes, r.SleepingPerJob, r.SleepingBeyondPayload)
	fmt.Fprintf(w, "    sleeping: job hash %d, steps hash %d; call records of the last minute %.1f per job, without them %.1f beyond the payload\n",
		r.SleepingJobHashBytes, r.StepsHashBytes, r.CallRecordBytes, r.SleepingSteady)
	fmt.Fprintf(w, "    baseline %s, ready %s, sleeping %s, after %s (of which call records of the last minute's wake-ups %s)\n",
		mib(r.BaselineBytes), mib(r.ReadyBytes), mib(r.SleepingBytes), mib(r.AfterBytes), mib(r.AfterCallRecordBytes))
	fmt.Fprintf(w, "  wake-up lag behind the due time, to the handler past its sleep: %s\n", r.Lag)
	fmt.Fprintf(w, "                                   to the handler's start:     %s\n", r.StartLag)
	c := r.Redis
	fmt.Fprintf(w, "  per wake-up: %.1f cmds, Redis %.1fµs, Go %.1fµs, %.3f worker round trips; %s\n",
		c.CommandsPerJob, c.CPUMicrosPerJob, c.GoCPUMicrosPerJob, c.WorkerTripsPerJob, strings.Join(c.topCalls(6), ", "))
	fmt.Fprintf(w, "    worker round trips per wake-up: %s; Redis µs per wake-up: %s\n",
		strings.Join(top(c.WorkerTripsByScript, 6), ", "), strings.Join(top(c.MicrosPerJob, 3), ", "))
	verdict := func(ok bool) string {
		if ok {
			return "meets"
		}
		return "misses"
	}
	fmt.Fprintf(w, "  memory without call records: %s the %d-byte budget; lag p99: %s the %g ms target\n",
		verdict(r.MemoryPass), r.MemoryBudget, verdict(r.LagPass), r.LagTargetP99)
}
