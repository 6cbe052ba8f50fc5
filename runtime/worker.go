package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// Worker claims and runs jobs. Create it with NewWorker, start it with Run.
type Worker struct {
	opts     Options
	st       *store.Store
	handlers Handlers
	log      *slog.Logger
	clk      Clock
	parts    []keys.Partition
	layouts  *store.Layouts          // the worker's view of queue layouts; parts are by it (layout.go)
	served   map[string]*servedQueue // the layouts of the served queues, read by Run
	nonce    string
	claims   atomic.Int64
	running  atomic.Bool

	// retentionOwed: Run could not record the worker's retention; its
	// maintenance loop, alone in touching it then, tries again
	// (retention.go), with retentionAt, when Run started on the store's
	// clock, as the record's start time. retentionFrom is when Run
	// started on the worker's clock: if Run could not read the store's
	// time either, a retry places the start by the time gone since.
	retentionOwed bool
	retentionFrom time.Time
	retentionAt   time.Time // zero until read

	mu       sync.Mutex
	inflight map[*Attempt]struct{}
	free     int            // slots not held by a handler
	freed    chan struct{}  // signalled when a slot frees
	busy     sync.WaitGroup // one per job being run and acked
	// handBacks are the releases of pushed jobs the worker did not run
	// (push.go), waited for before the acks stop.
	handBacks sync.WaitGroup
	pool      *runners // goroutines that run handlers (runner.go)
	// attemptBase is what each attempt's context derives from: jobsCtx's
	// values without its cancellation, so that an attempt's context is
	// not registered with (and removed from) a context every runner
	// shares, under its mutex, twice per job; drain cancels the attempts
	// in flight itself. Set by Run before the first claim.
	attemptBase context.Context

	acks         *batcher[store.Ack, store.AckResult]
	checkpoints  *batcher[store.Checkpoint, store.CheckpointResult]
	relayKick    chan struct{}
	longestLease time.Duration
	rel          reliability // death reports and stuck watches (reliability.go)

	tel *workerTelemetry // spans and metrics (telemetry.go)
	ev  *events          // OnEvent's queue; nil without OnEvent (events.go)

	// sig is what the worker tells tests it did: set by Run from its
	// context, off (each call a nil check) unless a test put a set there.
	sig testsignal.Worker

	// tailEnd is when Run's last calls (the final relay, the registry's
	// leave) must end, in Unix ns by the wall clock; 0 until Run's
	// shutdown gets there.
	tailEnd atomic.Int64
}

// NewWorker returns a worker on rdb (which stays the caller's: the worker
// never closes it) that runs the handlers h.
func NewWorker(rdb redis.UniversalClient, h Handlers, opts Options) (*Worker, error) {
	if rdb == nil || h == nil {
		return nil, fmt.Errorf("%w: a Redis client and handlers are required", ErrInvalidOptions)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	store.PrepareWorkerScripts()
	cfg := store.Config{
		NS: o.Namespace, RetainCompleted: o.RetainCompleted, RetainArchived: o.RetainArchived,
		RetainCancelled: o.RetainCancelled, CrashLimit: o.CrashLimit, CrashDelay: o.CrashDelay,
	}
	if o.DiscardCompleted {
		cfg.RetainCompleted = -1
	}
	if _, real := o.Clock.(wallClock); !real {
		cfg.Now = o.Clock.Now
	}
	w := &Worker{
		opts: o, st: store.New(rdb, cfg), handlers: h, log: o.Logger.With("worker", o.WorkerID),
		clk: o.Clock, nonce: randomHex(6), inflight: map[*Attempt]struct{}{},
		free: o.Concurrency, freed: make(chan struct{}, 1), relayKick: make(chan struct{}, 1),
	}
	lane := laneQueue(o.Concurrency)
	w.acks = newBatcher(maxAckBatch, lane, w.flushAcks,
		func(_ store.Ack, err error) store.AckResult { return store.AckResult{Err: err} })
	w.checkpoints = newBatcher(maxAckBatch, lane, w.flushCheckpoints,
		func(_ store.Checkpoint, err error) store.CheckpointResult { return store.CheckpointResult{Err: err} })
	w.longestLease = o.Lease
	for _, d := range o.KindLease {
		w.longestLease = max(w.longestLease, d)
	}
	w.layouts = store.NewLayouts(w.st, o.Partitions)
	w.tel = newTelemetry(o, w.st)
	w.ev = newEvents(o)
	return w, nil
}

// ID is the worker's identity as a lease holder.
func (w *Worker) ID() string { return w.opts.WorkerID }

// Run works until ctx is cancelled, then shuts down gracefully: it stops
// claiming, lets in-flight jobs finish within ShutdownWindow while still
// renewing their leases, cancels the rest with cause ErrShutdown and hands
// their jobs back without charging an attempt or a crash. While Redis
// does not answer, Run can take up to ShutdownWindow plus CancelGrace
// plus the longest lease, plus 5 s, to return: each job's outcome or
// hand-back is sent again until its lease could have run out, after which
// a reaper takes the job back (and charges the crash); then a last relay
// of the partitions' outboxes (what the last acks wrote: a child's end
// told to its parent) is tried for up to 5 s. Run returns nil
// after a graceful shutdown (also when ctx ends while it is starting), or
// an error if it could not start (a *sluicetype.LayoutMismatchError,
// ErrLayoutMismatch, when Options.Partitions disagrees with Redis about a
// queue; one wrapping ErrMalformed when the recorded layout of none of
// its queues can be read: a queue whose entry alone is corrupt is logged
// and not claimed from, and the others are served; one naming the wake-up
// subscription, which a single Redis server did not confirm within 10 s),
// or, after the same shutdown, one that wraps redis.ErrClosed if its
// Redis client was closed under it. A second Run while one runs returns
// ErrRunning at once.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer w.running.Store(false)
	w.tailEnd.Store(0) // a Run before this one's
	w.warnKindOptions()
	w.sig = testsignal.WorkerFrom(ctx) // before any goroutine of this Run
	bg := context.WithoutCancel(ctx)
	if err := w.useLayouts(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.recordRetention(ctx)
	wake, err := w.subscribe(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to shut down
		}
		return err
	}

	// Handlers run under jobsCtx; it is cancelled at the end of the
	// shutdown window.
	jobsCtx, cancelJobs := context.WithCancelCause(bg)
	defer cancelJobs(nil)
	w.attemptBase = context.WithoutCancel(jobsCtx)
	svcCtx, stopServices := context.WithCancel(bg)
	var services sync.WaitGroup
	w.acks.start(svcCtx, &services)
	w.checkpoints.start(svcCtx, &services)
	services.Go(func() { w.renewLoop(svcCtx) })
	services.Go(func() { w.maintainLoop(svcCtx) })
	services.Go(func() { w.relayLoop(svcCtx) })
	stopReliability := w.startReliability(bg)
	stopEvents := w.startEvents(bg)
	defer w.tel.watchDepth()()
	w.runPeriodic(ctx, &services)

	w.pool = newRunners()
	defer close(w.pool.quit)
	var (
		fetcher sync.WaitGroup
		lost    error                 // the Redis client was closed
		fetched = make(chan struct{}) // closed when the fetch loop has returned
	)
	fetcher.Go(func() {
		defer close(fetched)
		lost = w.fetchLoop(ctx, jobsCtx, wake)
	})
	closeWindow := w.shutdownWindow(ctx.Done(), fetched, cancelJobs)
	fetcher.Wait()
	wake.close()

	w.busy.Wait() // the jobs in flight finish, or the window cancels them
	closeWindow()
	w.handBacks.Wait()
	// the last relay and the leave of the registry after it (renewer.stop)
	// share the 5 s Run documents: on a Redis that answers nothing, each
	// took 5 s of its own
	tail := time.Now().Add(finalRelayTimeout)
	w.tailEnd.Store(tail.UnixNano())
	w.finalRelay(bg, tail) // the last acks' outbox entries: no other worker may serve these partitions
	stopServices()
	services.Wait()
	stopReliability()
	stopEvents()
	return lost
}

// shutdownWindow opens the shutdown window as shutdown begins (stop is
// closed: Run's context ended), or the fetch loop returned (fetched: the
// Redis client was closed under the worker), whichever comes first: not
// once the fetch loop has wound down, which sends again the claims that
// failed and withdraws the worker's offers, each call bounded by
// nodeTimeout but all of them one after the other, and takes as long as
// an unreachable Redis makes it. When the window runs out it cancels the
// jobs still in flight (cancelJobs, then each attempt), which are handed
// back. The function it returns closes the window (the jobs have all
// returned) and waits for its goroutine.
func (w *Worker) shutdownWindow(stop <-chan struct{}, fetched <-chan struct{}, cancelJobs context.CancelCauseFunc) (closeWindow func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-stop:
		case <-fetched:
		case <-quit:
			return
		}
		t := w.clk.NewTimer(w.opts.ShutdownWindow)
		defer t.Stop()
		select {
		case <-quit:
			return
		case <-t.C():
		}
		w.log.Info("shutdown window ended; cancelling in-flight jobs", "jobs", w.inflightCount())
		cancelJobs(ErrShutdown)
		w.mu.Lock()
		for a := range w.inflight {
			// an attempt whose cancel is not set yet sees jobsCtx cancelled
			// once it sets it (execute)
			a.mu.Lock()
			cancel := a.cancel
			a.mu.Unlock()
			if cancel != nil {
				cancel(ErrShutdown)
				a.watch()
			}
		}
		w.mu.Unlock()
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (w *Worker) inflightCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
}

// acquire takes up to n free slots and returns how many it took.
func (w *Worker) acquire(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = min(n, w.free)
	w.free -= n
	return n
}

// release gives n slots back.
func (w *Worker) release(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.free += n
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// suspects counts the attempts running in this process of jobs with a
// crash on record (Worker.isSuspect): 0 or 1. While one runs, claims lease
// no other (lua/claim.lua), whichever Worker of the process sends them,
// and one that a claim sent before leased anyway is handed back
// (fetchLoop takes the count with a CompareAndSwap), so a job that kills
// its process takes down only jobs with none (docs/guarantees.md). Two
// Workers in one process share it as they share the process.
// suspectFree holds the channel closed when the count falls back to 0,
// then replaced (under suspectMu, so that two ends never close one
// channel): the Workers whose claims passed a suspect over meanwhile
// claim again at once. A claim reads it without a lock.
var (
	suspects    atomic.Int32
	suspectMu   sync.Mutex
	suspectFree atomic.Pointer[chan struct{}]
)

func init() {
	ch := make(chan struct{})
	suspectFree.Store(&ch)
}

// suspectFreed is the channel closed when the process next runs no
// suspect (or one already closed, when the count fell to 0 as it was
// read: the caller then claims again at once, which is harmless).
func suspectFreed() <-chan struct{} { return *suspectFree.Load() }

// suspectDone ends a suspect's count (its handler returned).
func suspectDone() {
	suspectMu.Lock()
	defer suspectMu.Unlock()
	if suspects.Add(-1) == 0 {
		close(*suspectFree.Load())
		ch := make(chan struct{})
		suspectFree.Store(&ch)
	}
}
