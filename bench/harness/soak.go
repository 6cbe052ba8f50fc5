package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
)

const (
	// soakWindow is the most jobs the soak keeps enqueued but not yet
	// processed: the producers wait for the worker rather than pile a
	// million jobs up in Redis.
	soakWindow = 20000
	// soakSampleEvery is how often worker RSS and Redis memory are read.
	soakSampleEvery = time.Second
	// soakTolerance is how close to its baseline Redis memory must come
	// back once retention expired: the namespace keeps a few small keys
	// (per-minute statistics, the worker registry).
	soakTolerance = 1 << 20
	// soakSettle is how long after the last job (and its retention) the
	// soak waits for Redis memory to come back.
	soakSettle = time.Minute
)

// soakPoint is one sample of the soak.
type soakPoint struct {
	Seconds   float64 `json:"t"`
	Processed int64   `json:"processed"`
	WorkerRSS int64   `json:"worker_rss_bytes"`
	RedisUsed int64   `json:"redis_used_bytes"`
}

// soakResult is the soak scenario's report.
type soakResult struct {
	Jobs             int     `json:"jobs"`
	Concurrency      int     `json:"concurrency"`
	RetentionSeconds float64 `json:"retention_seconds"`
	// Seconds and JobsPerSec: from the first enqueue to the last job
	// processed.
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Worker process RSS (VmRSS): once it was ready, once a tenth of the
	// jobs were processed (warm: heaps and pools at their working size),
	// the highest sampled, and after the last job. Flat memory means Final
	// close to Warm.
	WorkerRSSBaseline int64 `json:"worker_rss_baseline_bytes"`
	WorkerRSSWarm     int64 `json:"worker_rss_warm_bytes"`
	WorkerRSSPeak     int64 `json:"worker_rss_peak_bytes"`
	WorkerRSSFinal    int64 `json:"worker_rss_final_bytes"`
	// Redis used_memory less client buffers (usedMemory): before the first job,
	// the highest sampled, and at the end of the wait for retention to
	// expire.
	RedisBaseline int64 `json:"redis_baseline_bytes"`
	RedisPeak     int64 `json:"redis_peak_bytes"`
	RedisFinal    int64 `json:"redis_final_bytes"`
	// RedisReturned: RedisFinal came within ToleranceBytes of
	// RedisBaseline, SettleSeconds after the last job was processed.
	RedisReturned  bool    `json:"redis_returned"`
	ToleranceBytes int64   `json:"tolerance_bytes"`
	SettleSeconds  float64 `json:"settle_seconds"`
	// Series is every sample, a second apart.
	Series []soakPoint `json:"series"`
}

// runSoak runs cfg.SoakJobs no-op jobs through one worker child process
// that keeps completed jobs for cfg.SoakRetention, sampling the worker's
// RSS and Redis memory every second, then waits for Redis memory to come
// back to its baseline once retention expired.
func runSoak(ctx context.Context, t *target, cfg config) (res *soakResult, err error) {
	n := cfg.SoakJobs
	t.progress("soak: %d jobs through one worker process, completed jobs kept %s", n, cfg.SoakRetention)
	ns := newNamespace("soak")
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()
	proc, err := startChild(ctx, childConfig{
		Role: roleSoak, URL: t.url, NS: ns, Partitions: t.partitions,
		Concurrency: cfg.Concurrency, Retention: cfg.SoakRetention,
	}, t.stderr)
	if err != nil {
		return nil, err
	}
	defer proc.kill()
	var processed atomic.Int64
	read := make(chan struct{})
	go func() {
		defer close(read)
		for line := range proc.lines {
			if v, ok := count(line); ok {
				processed.Store(v)
			}
		}
	}()
	// The client checks kinds against a registry: the worker's handler
	// runs in the child.
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(context.Context, *flow.Job[Noop]) error { return nil }); err != nil {
		return nil, err
	}
	client, err := flow.NewClient(t.producer.UniversalClient, t.clientOptions(ns, reg))
	if err != nil {
		return nil, err
	}

	res = &soakResult{
		Jobs: n, Concurrency: cfg.Concurrency, RetentionSeconds: cfg.SoakRetention.Seconds(),
		ToleranceBytes: soakTolerance, WorkerRSSBaseline: processRSS(proc.pid()),
	}
	if res.RedisBaseline, err = t.usedMemory(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	smp := &soakSampler{t: t, pid: proc.pid(), start: start, processed: &processed, res: res}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		smp.run(sctx)
	}()
	defer func() {
		stopSampling()
		<-sampled
	}()

	if err := soakProduce(ctx, t, client, cfg, &processed); err != nil {
		return res, err
	}
	for processed.Load() < int64(n) {
		if err := Sleep(ctx, childReport); err != nil {
			return res, fmt.Errorf("waiting for the worker: %w (%d of %d processed)", err, processed.Load(), n)
		}
	}
	done := time.Now()
	res.Seconds = done.Sub(start).Seconds()
	res.JobsPerSec = float64(n) / res.Seconds
	res.WorkerRSSFinal = processRSS(proc.pid())

	// Retention, then the sweeps: wait until Redis memory is back.
	t.progress("soak: all processed; waiting up to %s for Redis memory to return", cfg.SoakRetention+soakSettle)
	for deadline := done.Add(cfg.SoakRetention + soakSettle); ; {
		used, err := t.usedMemory(ctx)
		if err != nil {
			return res, err
		}
		res.RedisFinal, res.SettleSeconds = used, time.Since(done).Seconds()
		if res.RedisReturned = used <= res.RedisBaseline+soakTolerance; res.RedisReturned || time.Now().After(deadline) {
			break
		}
		if err := Sleep(ctx, soakSampleEvery); err != nil {
			return res, err
		}
	}
	stopSampling()
	<-sampled
	smp.mu.Lock()
	res.Series = smp.series
	smp.mu.Unlock()
	proc.terminate()
	<-read
	<-proc.ended
	if proc.err != nil {
		return res, fmt.Errorf("the worker process: %w", proc.err)
	}
	return res, nil
}

// soakProduce enqueues cfg.SoakJobs Noop jobs in chunks of half
// soakWindow, each once the worker has caught up to within half a window.
func soakProduce(ctx context.Context, t *target, client *flow.Client, cfg config, processed *atomic.Int64) error {
	chunk := soakWindow / 2
	for sent := 0; sent < cfg.SoakJobs; {
		for int64(sent)-processed.Load() > int64(chunk) {
			if err := Sleep(ctx, 5*time.Millisecond); err != nil {
				return fmt.Errorf("waiting for the worker: %w (%d of %d processed)", err, processed.Load(), cfg.SoakJobs)
			}
		}
		k := min(chunk, cfg.SoakJobs-sent)
		if _, err := produce(ctx, client, cfg, k, Noop{}, nil); err != nil {
			return err
		}
		sent += k
	}
	t.progress("soak: all %d enqueued", cfg.SoakJobs)
	return nil
}

// soakSampler records the soak's samples and peaks.
type soakSampler struct {
	t         *target
	pid       int
	start     time.Time
	processed *atomic.Int64
	res       *soakResult

	mu     sync.Mutex
	series []soakPoint
}

// run samples every soakSampleEvery until ctx ends.
func (s *soakSampler) run(ctx context.Context) {
	tick := time.NewTicker(soakSampleEvery)
	defer tick.Stop()
	tenth := int64(s.res.Jobs / 10)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := soakPoint{Seconds: time.Since(s.start).Seconds(), Processed: s.processed.Load(), WorkerRSS: processRSS(s.pid)}
		used, err := s.t.usedMemory(ctx)
		if err != nil {
			continue // ctx ended, or a blip: the next tick tries again
		}
		p.RedisUsed = used
		s.mu.Lock()
		s.series = append(s.series, p)
		s.res.WorkerRSSPeak = max(s.res.WorkerRSSPeak, p.WorkerRSS)
		s.res.RedisPeak = max(s.res.RedisPeak, p.RedisUsed)
		if s.res.WorkerRSSWarm == 0 && p.Processed >= tenth {
			s.res.WorkerRSSWarm = p.WorkerRSS
		}
		s.mu.Unlock()
	}
}

func (s *soakResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "Soak: %s no-op jobs through one worker process (Concurrency %d), completed jobs kept %gs; %s jobs/s over %.1fs\n",
		Thousands(float64(s.Jobs)), s.Concurrency, s.RetentionSeconds, Thousands(s.JobsPerSec), s.Seconds)
	fmt.Fprintf(w, "  worker RSS: %s ready, %s warm (10%% of the jobs), %s peak, %s after the last job (%+.2f MiB since warm)\n",
		mib(s.WorkerRSSBaseline), mib(s.WorkerRSSWarm), mib(s.WorkerRSSPeak), mib(s.WorkerRSSFinal),
		float64(s.WorkerRSSFinal-s.WorkerRSSWarm)/(1<<20))
	verdict := "back within"
	if !s.RedisReturned {
		verdict = "NOT back within"
	}
	fmt.Fprintf(w, "  Redis used_memory less client buffers: %s baseline, %s peak, %s %.0fs after the last job: %s %s of the baseline\n",
		mib(s.RedisBaseline), mib(s.RedisPeak), mib(s.RedisFinal), s.SettleSeconds, verdict, mib(s.ToleranceBytes))
}
