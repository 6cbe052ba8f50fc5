// Package flowtest runs jobs to completion in unit tests, on an embedded
// Redis (miniredis) with a fake clock: inspect a job's outcome and its step
// checkpoints, and inject a crash after a given step to test that a
// handler resumes correctly.
//
//	h := flowtest.New(t, reg)
//	res := h.Run(OrderPlaced{ID: 7}, flowtest.CrashAfterStep(2))
//	if res.Job.State != flow.StateCompleted { ... }
//	var receipt Receipt
//	res.Job.DecodeStep("charge", &receipt)
package flowtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// Harness runs jobs of one registry on its own embedded Redis.
type Harness struct {
	t      testing.TB
	Redis  *redis.Client
	Client *flow.Client
	Clock  *runtime.FakeClock
	reg    *flow.Registry
	opts   runtime.Options

	mu    sync.Mutex
	crash map[string]int // job ID -> crash after this many step commits
}

// New returns a harness for reg; it is torn down when the test ends. opts
// tunes the worker (Namespace and Clock are set by the harness; Backoff
// and CrashDelay default to none, so that retries run without moving the
// clock).
func New(t testing.TB, reg *flow.Registry, opts ...runtime.Options) *Harness {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	clk := runtime.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client, err := flow.NewClient(rdb, flow.ClientOptions{Registry: reg, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{t: t, Redis: rdb, Client: client, Clock: clk, reg: reg, crash: map[string]int{}}
	if len(opts) > 0 {
		h.opts = opts[0]
	}
	h.opts.Clock = clk
	if h.opts.Logger == nil {
		h.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if h.opts.Backoff == nil {
		h.opts.Backoff = func(int) time.Duration { return 0 }
	}
	if h.opts.CrashDelay == 0 {
		h.opts.CrashDelay = -1 // a crash retries at once, as Backoff's retries do
	}
	return h
}

// Option changes one Run.
type Option func(*runConfig)

type runConfig struct {
	crashAfter int
	enqueue    []flow.EnqueueOption
	timeout    time.Duration
}

// CrashAfterStep makes the first attempt crash (as a panic does: the job's
// crash_attempt is charged and it is requeued) right after its n-th step
// checkpoint, so the next attempt must resume from there.
func CrashAfterStep(n int) Option { return func(c *runConfig) { c.crashAfter = n } }

// WithEnqueueOptions passes options to the job's enqueue.
func WithEnqueueOptions(opts ...flow.EnqueueOption) Option {
	return func(c *runConfig) { c.enqueue = append(c.enqueue, opts...) }
}

// Within bounds how long Run waits in real time (default 10s).
func Within(d time.Duration) Option { return func(c *runConfig) { c.timeout = d } }

// Result is where a job ended.
type Result struct {
	Job *flow.JobInfo
	// Attempts is how many times the handler was called.
	Attempts int
}

// Run enqueues args and works it until it reaches a terminal state
// (completed, archived, quarantined, cancelled), or a state in which it
// waits on the clock (scheduled or retryable: a retry, a snooze, a
// workflow's step.Sleep or wait timeout) or on a signal (a workflow
// suspended by step.WaitSignal or step.Select): advance Clock, or send the
// signal (Client.Signal), and call Resume to go on. It fails the test if
// that takes longer than the timeout.
func (h *Harness) Run(args flow.Args, opts ...Option) *Result {
	h.t.Helper()
	cfg := runConfig{timeout: 10 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	res, err := h.Client.Enqueue(context.Background(), args, cfg.enqueue...)
	if err != nil {
		h.t.Fatalf("flowtest: enqueue: %v", err)
	}
	if cfg.crashAfter > 0 {
		h.mu.Lock()
		h.crash[res.ID] = cfg.crashAfter
		h.mu.Unlock()
	}
	return h.Resume(res.ID, cfg.timeout)
}

// Resume works the job id until it settles, as Run does.
//
// It reads the job each time the worker has settled it (the worker's
// test signal, sent once the outcome is durable), and once before: the
// signal is subscribed to before the worker starts, so a job settled
// before that first read is seen by it, and one settled after is
// signalled.
func (h *Harness) Resume(id string, timeout time.Duration) *Result {
	h.t.Helper()
	calls := &callCounter{}
	w, err := runtime.NewWorker(h.Redis, &handlers{h: h, calls: calls}, h.opts)
	if err != nil {
		h.t.Fatalf("flowtest: worker: %v", err)
	}
	sig := testsignal.NewWorker()
	sub := sig.Settled.Subscribe()
	defer sub.Close()
	ctx, cancel := context.WithCancel(testsignal.WithWorker(context.Background(), sig))
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(timeout)
	for {
		info, err := h.Client.Job(context.Background(), id)
		if err != nil {
			h.t.Fatalf("flowtest: reading job %s: %v", id, err)
		}
		if settled(info, h.Clock.Now()) {
			return &Result{Job: info, Attempts: calls.get()}
		}
		if _, ok := sub.Await(time.Until(deadline), func(s testsignal.Settled) bool { return s.JobID == id }); !ok {
			h.t.Fatalf("flowtest: job %s still %s after %s", id, info.State, timeout)
		}
	}
}

// settled: the job is finished, or waits for the clock to pass now, or
// for a signal.
func settled(j *flow.JobInfo, now time.Time) bool {
	switch j.State {
	case flow.StateCompleted, flow.StateArchived, flow.StateQuarantined, flow.StateCancelled:
		return true
	case flow.StateScheduled:
		// due later, or a workflow suspended on signals only (no due time)
		return j.RunAt.After(now) || (j.RunAt.IsZero() && len(j.AwaitingSignals) > 0)
	case flow.StateRetryable:
		return j.RunAt.After(now)
	}
	return false
}

type callCounter struct {
	mu sync.Mutex
	n  int
}

func (c *callCounter) inc() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *callCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// handlers wraps the registry to count calls and inject crashes.
type handlers struct {
	h     *Harness
	calls *callCounter
}

// Handler implements runtime.Handlers.
func (hs *handlers) Handler(kind string) (runtime.Handler, bool) {
	inner, ok := hs.h.reg.Handler(kind)
	if !ok {
		return nil, false
	}
	counted := hs.count(inner)
	if p, ok := inner.(runtime.RetryPolicy); ok { // keep the kind's retry policy
		return retrying{HandlerFunc: counted, policy: p}, true
	}
	return counted, true
}

// retrying keeps a wrapped handler's retry policy.
type retrying struct {
	runtime.HandlerFunc
	policy runtime.RetryPolicy
}

func (r retrying) RetryDelay(attempt int, err error) time.Duration {
	return r.policy.RetryDelay(attempt, err)
}

// count wraps inner to count its calls and inject crashes.
func (hs *handlers) count(inner runtime.Handler) runtime.HandlerFunc {
	return runtime.HandlerFunc(func(ctx context.Context, a *runtime.Attempt) ([]byte, error) {
		hs.calls.inc()
		hs.h.mu.Lock()
		after, crash := hs.h.crash[a.ID]
		delete(hs.h.crash, a.ID)
		hs.h.mu.Unlock()
		if crash {
			st, _ := attempt.From(ctx)
			commits, next := 0, st.Committed
			st.Committed = func(step string, outboxed int) {
				if next != nil {
					next(step, outboxed)
				}
				if commits++; commits == after {
					panic("flowtest: injected crash after step " + step)
				}
			}
		}
		return inner.Work(ctx, a)
	})
}
