package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
)

// The limits scenario: what flow control costs when it never
// binds. The throughput scenario's drain with DiscardCompleted, run as is
// and with every job under a limit far above what the run reaches.
const (
	// limitsRounds is how many times each mode runs, interleaved; the
	// median of an odd count is one of the runs.
	limitsRounds = 3
	// limitsFloor is the requirement: a limited mode keeps at least this
	// share of the unlimited processed/s.
	limitsFloor = 0.9
	// The rate mode's class and bucket: a million jobs a second (and as
	// many in a burst), some fifty times what the machine runs.
	limitsRateClass = "bench"
	limitsRateJobs  = 1_000_000
	limitsRatePer   = time.Second
	// The concurrency mode's keys: job i gets key i mod limitsKeys, each
	// with a ceiling of limitsKeyLimit running jobs, which worker
	// Concurrency never reaches.
	limitsKeys     = 1000
	limitsKeyLimit = 1000
)

// The limits scenario's modes.
const (
	limitsUnlimited   = "unlimited"
	limitsRate        = "rate"
	limitsConcurrency = "concurrency"
)

// limitsRun is one drain of the limits scenario: the throughput figures,
// and how many jobs went to a wait list.
type limitsRun struct {
	throughputRun
	// WaitListPushes is the RPUSHes Redis ran while the worker drained the
	// queue: in this setup only a claim that sends a job to a concurrency
	// key's or rate class's wait list makes one, so it is 0 when no limit
	// bound (on an external Redis it counts other clients' RPUSHes too).
	WaitListPushes int64 `json:"wait_list_pushes"`
}

// limitsMode is one mode's runs and their median.
type limitsMode struct {
	Mode string `json:"mode"`
	// Options describes the enqueue options every job carried.
	Options string `json:"options"`
	// Runs are in the order they ran; run k of every mode is round k.
	Runs []limitsRun `json:"runs"`
	// Median is the index in Runs of the run with the median processed/s;
	// the figures below are that run's.
	Median          int     `json:"median_run"`
	ProcessedPerSec float64 `json:"processed_per_sec"`
	// Redis and Go CPU per job of the drain (claim, run, ack), and Redis
	// CPU per job of the enqueue before it.
	ProcessRedisCPUMicrosPerJob float64 `json:"process_redis_cpu_us_per_job"`
	ProcessGoCPUMicrosPerJob    float64 `json:"process_go_cpu_us_per_job"`
	ProcessCommandsPerJob       float64 `json:"process_commands_per_job"`
	EnqueueRedisCPUMicrosPerJob float64 `json:"enqueue_redis_cpu_us_per_job"`
	// VsUnlimited is ProcessedPerSec over the unlimited mode's (1 for the
	// unlimited mode itself); RedisCPUVsUnlimited the same for
	// ProcessRedisCPUMicrosPerJob, the cost a busy machine disturbs less.
	VsUnlimited         float64 `json:"vs_unlimited"`
	RedisCPUVsUnlimited float64 `json:"redis_cpu_vs_unlimited"`
}

// limitsResult is the limits scenario's report.
type limitsResult struct {
	Jobs        int `json:"jobs"`
	Producers   int `json:"producers"`
	Batch       int `json:"batch"`
	Concurrency int `json:"concurrency"`
	Rounds      int `json:"rounds"`
	// Modes: unlimited, rate, concurrency.
	Modes []*limitsMode `json:"modes"`
	// The requirement's ratios: the median processed/s of the rate and
	// concurrency modes over the unlimited one, against Floor.
	RateVsUnlimited        float64 `json:"rate_vs_unlimited"`
	ConcurrencyVsUnlimited float64 `json:"concurrency_vs_unlimited"`
	Floor                  float64 `json:"floor"`
	Pass                   bool    `json:"pass"`
}

// limitsSpec is how one mode enqueues its jobs, and what it checks after
// its run.
type limitsSpec struct {
	mode, options string
	itemOpts      func(i int) []flow.EnqueueOption
	check         func(ns string, m measured) error
}

// runLimits drains cfg.Jobs no-op jobs limitsRounds times in each mode,
// interleaving the modes (unlimited, rate, concurrency, unlimited, ...) so
// that a machine whose speed drifts slows them alike, and compares the
// modes' medians. An uncounted unlimited drain comes first: the first run
// of a process tends to be slower (heaps still growing on both sides),
// which would penalise the unlimited mode, as it goes first.
//
// Each run carries the pprof label limits=<mode>, which the worker's
// goroutines inherit: with -cpuprofile, go tool pprof -tagfocus
// limits=concurrency shows one mode alone.
func runLimits(ctx context.Context, t *target, cfg config) (*limitsResult, error) {
	res := &limitsResult{
		Jobs: cfg.Jobs, Producers: cfg.Producers, Batch: cfg.Batch, Concurrency: cfg.Concurrency,
		Rounds: limitsRounds, Floor: limitsFloor,
	}
	specs := limitsSpecs(ctx, t)
	for _, sp := range specs {
		res.Modes = append(res.Modes, &limitsMode{Mode: sp.mode, Options: sp.options})
	}
	t.progress("limits: warm-up drain (not counted)")
	var err error
	pprof.Do(ctx, pprof.Labels("limits", "warm-up"), func(ctx context.Context) {
		_, _, err = noopRun(ctx, t, cfg, "limits", modeDrain, false, nil, nil)
	})
	if err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}
	for round := range limitsRounds {
		for i, sp := range specs {
			t.progress("limits: round %d of %d, %s", round+1, limitsRounds, sp.mode)
			var (
				run throughputRun
				m   measured
			)
			pprof.Do(ctx, pprof.Labels("limits", sp.mode), func(ctx context.Context) {
				run, m, err = noopRun(ctx, t, cfg, "limits", modeDrain, false, sp.itemOpts, sp.check)
			})
			if err != nil {
				return res, fmt.Errorf("%s, round %d: %w", sp.mode, round+1, err)
			}
			pushes := m.after.calls["rpush"] - m.filled.calls["rpush"]
			if pushes > 0 && !t.external {
				return res, fmt.Errorf("%s, round %d: %d jobs went to a wait list: a limit bound", sp.mode, round+1, pushes)
			}
			res.Modes[i].Runs = append(res.Modes[i].Runs, limitsRun{throughputRun: run, WaitListPushes: pushes})
		}
	}
	res.summarize()
	return res, nil
}

// limitsSpecs are the three modes.
func limitsSpecs(ctx context.Context, t *target) []limitsSpec {
	// Burst is set: WithRateLimit's option writes its default into the
	// RateLimit it captured, a data race when producers share the option.
	rate := []flow.EnqueueOption{flow.WithRateLimit(limitsRateClass, flow.RateLimit{Jobs: limitsRateJobs, Per: limitsRatePer, Burst: limitsRateJobs})}
	perKey := make([][]flow.EnqueueOption, limitsKeys)
	for k := range perKey {
		perKey[k] = []flow.EnqueueOption{flow.WithConcurrencyLimit("tenant-"+strconv.Itoa(k), limitsKeyLimit)}
	}
	// The scripts' flow-control keys (lua/lib.lua): the cc hash counts
	// running jobs per concurrency key, rl:<class> is a class's bucket;
	// each partition has its own.
	partitions := func(ns string) []keys.Partition {
		ps := make([]keys.Partition, t.partitions)
		for i := range ps {
			ps[i] = keys.Partition{NS: ns, Queue: "default", Index: i}
		}
		return ps
	}
	return []limitsSpec{
		{mode: limitsUnlimited, options: "none"},
		{
			mode:     limitsRate,
			options:  fmt.Sprintf("WithRateLimit(%q, RateLimit{Jobs: %d, Per: %s, Burst: %d})", limitsRateClass, limitsRateJobs, limitsRatePer, limitsRateJobs),
			itemOpts: func(int) []flow.EnqueueOption { return rate },
			// The class's bucket exists once a claim took a token from it.
			check: func(ns string, _ measured) error {
				for _, p := range partitions(ns) {
					n, err := t.admin.Exists(ctx, p.RateBucket(limitsRateClass)).Result()
					if err != nil || n > 0 {
						return err
					}
				}
				return errors.New("no token bucket for the rate class: the limit never reached the claim")
			},
		},
		{
			mode:     limitsConcurrency,
			options:  fmt.Sprintf("WithConcurrencyLimit(\"tenant-<i mod %d>\", %d)", limitsKeys, limitsKeyLimit),
			itemOpts: func(i int) []flow.EnqueueOption { return perKey[i%limitsKeys] },
			// Every job took a slot of its key and gave it back: the
			// claims counted them in the cc hash (a key dropping to zero
			// running jobs is an HDEL), and the acks emptied it.
			check: func(ns string, m measured) error {
				if !t.external && m.after.calls["hdel"] == m.filled.calls["hdel"] {
					return errors.New("no concurrency slot was released: the limit never reached the claim")
				}
				for _, p := range partitions(ns) {
					n, err := t.admin.HLen(ctx, p.Concurrency()).Result()
					if err == nil && n > 0 {
						err = fmt.Errorf("%d concurrency keys of partition %d still count running jobs after every job was acked", n, p.Index)
					}
					if err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
}

// summarize sets each mode's median figures and the ratios.
func (r *limitsResult) summarize() {
	for _, md := range r.Modes {
		if len(md.Runs) == 0 {
			continue
		}
		order := make([]int, len(md.Runs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			x, y := md.Runs[a].ProcessedPerSec, md.Runs[b].ProcessedPerSec
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
		md.Median = order[len(order)/2]
		run := md.Runs[md.Median]
		md.ProcessedPerSec = run.ProcessedPerSec
		if p := run.ProcessRedis; p != nil {
			md.ProcessRedisCPUMicrosPerJob, md.ProcessGoCPUMicrosPerJob = p.CPUMicrosPerJob, p.GoCPUMicrosPerJob
			md.ProcessCommandsPerJob = p.CommandsPerJob
		}
		if e := run.EnqueueRedis; e != nil {
			md.EnqueueRedisCPUMicrosPerJob = e.CPUMicrosPerJob
		}
	}
	if len(r.Modes) != 3 || r.Modes[0].ProcessedPerSec <= 0 {
		return
	}
	base := r.Modes[0].ProcessedPerSec
	for _, md := range r.Modes {
		md.VsUnlimited = md.ProcessedPerSec / base
		if cpu := r.Modes[0].ProcessRedisCPUMicrosPerJob; cpu > 0 {
			md.RedisCPUVsUnlimited = md.ProcessRedisCPUMicrosPerJob / cpu
		}
	}
	r.RateVsUnlimited, r.ConcurrencyVsUnlimited = r.Modes[1].VsUnlimited, r.Modes[2].VsUnlimited
	r.Pass = r.RateVsUnlimited >= r.Floor && r.ConcurrencyVsUnlimited >= r.Floor
}
