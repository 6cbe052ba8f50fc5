package chaos

// The worker process. The test binary re-executes itself with envWorker
// set; init recognises it before TestMain, so a worker process starts no
// redis-server of its own. So it does an isolated child of a worker
// (boxedArg, boxed_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// envWorker, when set, makes the test binary a worker process configured
// by its value (a JSON workerConfig).
const envWorker = "SLUICE_CHAOS_WORKER"

func init() {
	if len(os.Args) > 1 && os.Args[1] == boxedArg {
		boxedMain(os.Args[2:]) // an isolated child (boxed_test.go)
	}
	if cfg := os.Getenv(envWorker); cfg != "" {
		os.Exit(childMain(cfg))
	}
}

// workerConfig is a worker process's set-up.
type workerConfig struct {
	Addr        string // the proxy in front of Redis
	NS          string
	Concurrency int
	Lease       time.Duration
	Renew       time.Duration
	Maintenance time.Duration
	// NoRetries: every other process the fleet launches (fleet.launch)
	// has a Redis client that sends nothing again (go-redis MaxRetries
	// -1), so that a reply the proxy drops fails the call itself, as a
	// network that lost it past go-redis's retries does: what Sluice
	// sends again itself (claims, acks, step commits under their IDs)
	// meets the faults.
	NoRetries bool
	// ReadTimeout is the Redis client's (go-redis's default when 0).
	ReadTimeout time.Duration
	// BoxDir, if set, makes the workers run the boxed jobs in isolated
	// children, which note themselves there (boxed_test.go).
	BoxDir string `json:",omitempty"`
}

// ordinaryCrashLimit is the crash limit of the ordinary jobs' workers:
// every lease lost to a SIGKILL, a stop, a Redis restart or a cut
// connection charges a crash to each job the worker held, so a limit of 3
// would quarantine unlucky ordinary jobs in a long run. Crash limits are
// per worker, so the culprits (the poison pill, the exit pills) have their
// own queue served by workers with the default limit. They share the
// worker processes with the ordinary jobs: an exit pill takes the ordinary
// jobs running in its process down with it.
const ordinaryCrashLimit = 1000

// poisonCrashLimit is the culprits' workers' crash limit, the default.
const poisonCrashLimit = 3

// childMain runs three workers on one connection pool: one for the
// ordinary jobs, one for the culprits' queue and one for the trickle
// (trickle_test.go). It prints "ready" once they
// exist and works until SIGKILL or SIGTERM (graceful, exit status 0).
func childMain(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker: bad config:", err)
		return 2
	}
	ro := &redis.Options{Addr: cfg.Addr, DialTimeout: time.Second, ReadTimeout: cfg.ReadTimeout}
	if cfg.NoRetries {
		ro.MaxRetries = -1
	}
	rdb := redis.NewClient(ro)
	defer rdb.Close()
	reg, err := withBoxes(cfg, registry(cfg.NS, rdb))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	log := slog.New(staleSpy{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
	base := runtime.Options{
		Namespace: cfg.NS, Lease: cfg.Lease, RenewInterval: cfg.Renew, MaintenanceInterval: cfg.Maintenance,
		IdlePoll: 500 * time.Millisecond, ShutdownWindow: 5 * time.Second,
		Backoff: func(int) time.Duration { return 0 }, NonConsuming: transient, Logger: log,
	}
	ordinary, poison, trickle := base, base, base
	ordinary.Concurrency, ordinary.CrashLimit = cfg.Concurrency, ordinaryCrashLimit
	poison.Queues, poison.Concurrency, poison.CrashLimit = map[string]int{poisonQueue: 1}, 1, poisonCrashLimit
	trickle.Queues, trickle.Concurrency, trickle.CrashLimit = map[string]int{trickleQueue: 1}, trickleConcurrency, ordinaryCrashLimit
	var workers []*runtime.Worker
	for _, o := range []runtime.Options{ordinary, poison, trickle} {
		w, err := runtime.NewWorker(rdb, reg, o)
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			return 2
		}
		workers = append(workers, w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// The trickle worker reports the pushed jobs it hands back.
	sig := &testsignal.Worker{}
	sig.Settled.Init("settled")
	go func() {
		for s := range sig.Settled.C() {
			// a hand-back whose release failed is no hand-back: the job
			// is then counted lost (checkPushes)
			if s.By == testsignal.HandBack && s.Err == nil {
				fmt.Printf("push handed back %s\n", s.JobID)
			}
		}
	}()
	fmt.Println("ready")
	var wg sync.WaitGroup
	for i, w := range workers {
		wctx := ctx
		if i == len(workers)-1 {
			wctx = testsignal.WithWorker(ctx, sig)
		}
		wg.Go(func() { run(wctx, w) })
	}
	wg.Wait()
	return 0
}

// run runs w until ctx ends, starting it again while Run fails (Redis
// unreachable at start-up).
func run(ctx context.Context, w *runtime.Worker) {
	for ctx.Err() == nil {
		err := w.Run(ctx)
		if err == nil {
			return
		}
		fmt.Fprintln(os.Stderr, "worker: Run:", err)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// staleSpy passes Warn and above to the next handler and reports every
// log record that carries runtime.ErrStale (an outcome the fence refused)
// on stdout as "stale outcome".
type staleSpy struct{ next slog.Handler }

func (s staleSpy) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (s staleSpy) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, runtime.ErrStale) {
			fmt.Println("stale outcome")
			return false
		}
		return true
	})
	if !s.next.Enabled(ctx, r.Level) {
		return nil
	}
	return s.next.Handle(ctx, r)
}

func (s staleSpy) WithAttrs(as []slog.Attr) slog.Handler { return staleSpy{s.next.WithAttrs(as)} }
func (s staleSpy) WithGroup(g string) slog.Handler       { return staleSpy{s.next.WithGroup(g)} }
