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
//
// Run and Resume work the job, and every job it spawns or calls in any
// queue (flow.Spawn and Join, flow.Call), until it has finished or waits
// on the clock or on a signal, with nothing else left to run. Time moves
// only when the test says so, and a signal comes only when the test sends
// it:
//
//	res := h.Run(Expense{Amount: 120})        // waits for "decision", or 3 days
//	h.Clock.Advance(24 * time.Hour)           // the reminder's timer
//	res = h.Resume(res.Job.ID, time.Second)   // reminded, waiting again
//	h.Client.Signal(ctx, res.Job.ID, "decision", Decision{OK: true})
//	res = h.Resume(res.Job.ID, time.Second)   // completed
package flowtest

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
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
	client, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: namespace, Registry: reg, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{t: t, Redis: rdb, Client: client, Clock: clk, reg: reg, crash: map[string]int{}}
	if len(opts) > 0 {
		h.opts = opts[0]
	}
	h.opts.Clock, h.opts.Namespace = clk, namespace
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

// namespace is the harness's: it has its Redis to itself.
const namespace = "sluice"

// Redeploy returns a harness on h's Redis and clock (and worker options)
// whose worker runs reg instead: a new release of the handlers, deployed
// while h's jobs sleep or wait for signals. Resume a job started by h on
// the returned harness to run it under the new code:
//
//	v1 := flowtest.New(t, regV1)
//	old := v1.Run(Order{}).Job // suspended in step.Sleep
//	v2 := v1.Redeploy(regV2)
//	v2.Clock.Advance(time.Hour)
//	res := v2.Resume(old.ID, 10*time.Second)
//
// Both harnesses stay usable; run one at a time, since each one's worker
// works every job in the Redis. Crashes requested with CrashAfterStep are
// per harness.
func (h *Harness) Redeploy(reg *flow.Registry) *Harness {
	h.t.Helper()
	client, err := flow.NewClient(h.Redis, flow.ClientOptions{Namespace: namespace, Registry: reg, Clock: h.Clock})
	if err != nil {
		h.t.Fatal(err)
	}
	return &Harness{t: h.t, Redis: h.Redis, Client: client, Clock: h.Clock, reg: reg, opts: h.opts, crash: map[string]int{}}
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
	// Attempts is how many times the job's handler was called (by this
	// Run or Resume; not counting the calls of the jobs it spawned).
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

// Resume works the job id until it settles, as Run does, and until
// nothing else is left to run now: the worker serves every queue with
// jobs in the harness's Redis, so a parent waiting on children in other
// queues (Join, Call) sees them run, and Resume returns once the parent
// has finished or waits on the clock or a signal, with no job available
// or running and no notification left to relay.
//
// It checks after each job the worker settles, each relay pass and each
// time the worker goes idle (the worker's test signals, sent once the
// write is durable), and once before: the signals are subscribed to
// before the worker starts, so nothing settled in between is missed.
func (h *Harness) Resume(id string, timeout time.Duration) *Result {
	h.t.Helper()
	ctx := context.Background()
	calls := &callCounter{}
	sig := testsignal.NewWorker()
	settles, relays, idles := sig.Settled.Subscribe(), sig.Relayed.Subscribe(), sig.Idle.Subscribe()
	defer func() {
		settles.Close()
		relays.Close()
		idles.Close()
	}()
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	served := map[string]bool{}
	expire := time.NewTimer(timeout)
	defer expire.Stop()
	for {
		// (Re)start the worker when a queue without one has jobs: the
		// children of a parent it runs may be in any queue.
		parts, err := h.partitions(ctx)
		if err != nil {
			h.t.Fatalf("flowtest: reading the queues: %v", err)
		}
		if stop == nil || !covers(served, parts) {
			if stop != nil {
				stop()
			}
			stop = h.startWorker(ctx, parts, served, &handlers{h: h, calls: calls}, sig)
		}
		info, err := h.Client.Job(ctx, id)
		if err != nil {
			h.t.Fatalf("flowtest: reading job %s: %v", id, err)
		}
		if settled(info, h.Clock.Now()) {
			// read after the job: what it spawned since is listed too
			if parts, err = h.partitions(ctx); err != nil {
				h.t.Fatalf("flowtest: reading the queues: %v", err)
			}
			busy, err := h.busy(ctx, parts)
			if err != nil {
				h.t.Fatalf("flowtest: %v", err)
			}
			if !busy && covers(served, parts) {
				// read again: it may have moved on before the check
				if info, err = h.Client.Job(ctx, id); err != nil {
					h.t.Fatalf("flowtest: reading job %s: %v", id, err)
				}
				if settled(info, h.Clock.Now()) {
					return &Result{Job: info, Attempts: calls.get(id)}
				}
			}
			if !covers(served, parts) {
				continue // start a worker for the new queues first
			}
		}
		select {
		case <-settles.C():
		case <-relays.C():
		case <-idles.C():
		case <-expire.C:
			h.t.Fatalf("flowtest: job %s still %s after %s", id, info.State, timeout)
		}
	}
}

// covers reports whether served has every queue of parts.
func covers(served map[string]bool, parts []keys.Partition) bool {
	for _, p := range parts {
		if !served[p.Queue] {
			return false
		}
	}
	return true
}

// startWorker runs a worker of the harness's options on the queues of
// parts too (adding them to served), sending sig; stop ends it.
func (h *Harness) startWorker(ctx context.Context, parts []keys.Partition, served map[string]bool, hs runtime.Handlers, sig *testsignal.Worker) (stop func()) {
	opts := h.opts
	opts.Queues = map[string]int{}
	for q, w := range h.opts.Queues {
		opts.Queues[q] = w
	}
	if len(opts.Queues) == 0 {
		opts.Queues["default"] = 1
	}
	for _, p := range parts {
		if _, ok := opts.Queues[p.Queue]; !ok {
			opts.Queues[p.Queue] = 1 // its layout is the registry's
		}
	}
	for q := range opts.Queues {
		served[q] = true
	}
	w, err := runtime.NewWorker(h.Redis, hs, opts)
	if err != nil {
		h.t.Fatalf("flowtest: worker: %v", err)
	}
	wctx, cancel := context.WithCancel(testsignal.WithWorker(ctx, sig))
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	return func() {
		cancel()
		<-done
	}
}

// partitions lists the partitions with jobs in the harness's namespace,
// found by their counters.
func (h *Harness) partitions(ctx context.Context) ([]keys.Partition, error) {
	var out []keys.Partition
	iter := h.Redis.Scan(ctx, 0, "{"+namespace+":*}:stats", 0).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		tag := k[1:strings.Index(k, "}")] // ns:queue:N
		parts := strings.Split(tag, ":")
		if len(parts) != 3 {
			continue
		}
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			continue
		}
		out = append(out, keys.Partition{NS: namespace, Queue: parts[1], Index: n})
	}
	return out, iter.Err()
}

// busy reports whether a job of the namespace is available or running,
// or scheduled or retryable and due by the harness's clock, or a
// notification (a child's end, a relayed effect) waits in an outbox.
//
// Each partition is read in one transaction: a job the worker moves
// meanwhile (a due retry claimed, from sched to running) is seen where
// it is, not missed between two reads.
func (h *Harness) busy(ctx context.Context, parts []keys.Partition) (bool, error) {
	// A scheduled or retryable job due by the harness's clock (the test
	// advanced it, or a retry without backoff) is work to run now: the
	// worker promotes it at its next claim, which also moves a bucket of
	// later jobs that has begun into sched (sched_near).
	due := strconv.FormatInt(h.Clock.Now().UnixMilli(), 10)
	for _, p := range parts {
		var (
			n          *redis.SliceCmd
			out        *redis.IntCmd
			sched, lat *redis.IntCmd
		)
		if _, err := h.Redis.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			n = pp.HMGet(ctx, p.Stats(), flow.StateAvailable, flow.StateRunning)
			out = pp.XLen(ctx, p.Outbox())
			sched = pp.ZCount(ctx, p.Sched(), "-inf", due)
			lat = pp.ZCount(ctx, p.Later(), "-inf", due)
			return nil
		}); err != nil {
			return false, err
		}
		for _, v := range n.Val() {
			if s, _ := v.(string); s != "" && s != "0" {
				return true, nil
			}
		}
		if out.Val() > 0 || sched.Val() > 0 || lat.Val() > 0 {
			return true, nil
		}
	}
	return false, nil
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

// callCounter counts handler calls by job ID: a Resume works the jobs
// its job spawns too, whose calls are theirs.
type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) inc(id string) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[id]++
	c.mu.Unlock()
}

func (c *callCounter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
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
		hs.calls.inc(a.ID)
		hs.h.mu.Lock()
		after, crash := hs.h.crash[a.ID]
		delete(hs.h.crash, a.ID)
		hs.h.mu.Unlock()
		if crash {
			st, _ := attempt.From(ctx)
			st.Host = &crashingHost{Host: st.Host, after: after}
		}
		return inner.Work(ctx, a)
	})
}

// crashingHost is the host of an attempt that crashes after its after-th
// commit: it panics as the commit returns, the checkpoint written.
type crashingHost struct {
	attempt.Host
	after, commits int
}

func (h *crashingHost) Committed(step string, outboxed int) {
	h.Host.Committed(step, outboxed)
	if h.commits++; h.commits == h.after {
		panic("flowtest: injected crash after step " + step)
	}
}
