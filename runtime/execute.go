package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/outcome"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// result is what a handler goroutine produced.
type result struct {
	data  []byte
	err   error
	panic any
	stack []byte
}

// start sets up the attempt of claimed job j and hands it to a runner. It
// keeps nothing of j but what j points to: the fetch loop decodes the next
// claim into the same storage. suspect: j is a suspect, and its caller
// took the process's suspects count for it, given back once its handler
// returns.
func (w *Worker) start(jobsCtx context.Context, p keys.Partition, j *store.Job, claimed time.Time, suspect bool) {
	lease := w.leaseFor(j.Kind)
	a := newAttempt(p, j, lease)
	a.Worker = w.opts.WorkerID
	a.leaseEnd = claimed.Add(lease)
	a.state = &a.stateMem
	a.state.Init(w.st, a.ref, a.storeLease(), j.Steps)
	if j.Checkpointed {
		a.state.Marked()
	}
	a.state.Created, a.state.Claimed = j.Created, a.Claimed
	a.state.Layouts = w.layouts
	a.suspect = suspect
	w.track(a)
	w.mu.Lock()
	w.inflight[a] = struct{}{}
	w.mu.Unlock()
	w.busy.Add(1)
	w.sig.Claimed.Signal(testsignal.Claimed{Worker: a.Worker, JobID: a.ID, Fence: a.Fence})
	w.run(jobsCtx, a)
}

// execute runs one attempt on a runner goroutine (runner.go) whose ID is
// gid, then acks its outcome. The goroutine holds the concurrency slot until the
// handler returns. If the handler ignores its context's cancellation past
// CancelGrace, a watcher settles the job without it (the slot stays taken
// until the handler does return).
func (w *Worker) execute(jobsCtx context.Context, a *Attempt, gid uint64) {
	ctx, cancel := context.WithCancelCause(w.attemptBase)
	defer cancel(nil)
	a.vctx = attemptCtx{Context: ctx, a: a}
	ctx = w.startSpan(a)
	timed := false
	if t := w.timeout(a); t > 0 {
		var stop context.CancelFunc
		ctx, stop = withDeadlineCause(ctx, w.clk, w.clk.Now().Add(t), fmt.Errorf("%w after %s", ErrTimeout, t))
		defer stop()
		timed = true
	}
	if !a.Deadline.IsZero() {
		// The deadline is store time, and the worker's clock may be off
		// from Redis's: it is as far from the claim's store time
		// (a.Claimed) as from the time the worker sent the claim by its
		// own clock, which start made the lease's start (leaseEnd-lease;
		// a renewal between start and now moves it on by no more than the
		// runner took to start).
		a.mu.Lock()
		sent := a.leaseEnd.Add(-a.lease)
		a.mu.Unlock()
		var stop context.CancelFunc
		ctx, stop = withDeadlineCause(ctx, w.clk, sent.Add(a.Deadline.Sub(a.Claimed)), ErrDeadline)
		defer stop()
		timed = true
	}
	// The watch reads the attempt's context as complete: it is built
	// before the watch is published with cancel (a shutdown may call it
	// at once).
	a.mu.Lock()
	a.ctl.ctx, a.cancel = ctx, cancel
	early := a.early
	a.mu.Unlock()
	if early == nil && jobsCtx.Err() != nil { // shutdown cancelled it before cancel was set
		early = context.Cause(jobsCtx)
	}
	if early != nil { // stopped before cancel was set: the handler starts cancelled
		cancel(early)
		a.watch()
	}
	// a job the shutdown window ended for before its handler started is
	// handed back unrun, nothing charged (Run): called with its context
	// cancelled, a handler that does not look at it first ran the job on
	// a worker that had stopped, and a success was acked as a completion
	unrun := errors.Is(early, ErrShutdown)
	stopWatch := func() bool { return false }
	if timed {
		// Only timers cancel without telling us; lose and shutdown call
		// watch themselves, which spares every other job an AfterFunc.
		stopWatch = context.AfterFunc(ctx, a.watch)
	}

	var r result
	normal := false
	a.ctl.gid.Store(gid) // the handler's goroutine, as it starts
	if w.ev != nil {
		w.startedEvent(a) // events.go
	}
	defer func() {
		// runtime.Goexit (t.FailNow in a handler) skips both the return and
		// recover: settle it like a panic rather than never.
		if !normal {
			r = result{panic: "handler called runtime.Goexit", stack: debug.Stack()}
		}
		a.ctl.gid.Store(0) // the runner goroutine moves on to other attempts
		r = w.join(a, r)   // tracked goroutines (tracked.go)
		// the cause the handler was stopped for as it returned: a stop
		// after that (expire, which leaves a returned handler's outcome to
		// be acked: abandon) must not turn its outcome into none
		stopped := a.handlerReturned(ctx)
		stopWatch()
		if a.suspect {
			suspectDone()
		}
		w.release(1)
		if a.settled.CompareAndSwap(false, true) {
			cause := stopped
			if cause != nil && a.state.Decided() && !errors.Is(cause, ErrLeaseLost) {
				cause = nil // the outcome was known before (an isolated child replied)
			}
			w.conclude(a, r, true, cause)
		}
	}()
	if unrun {
		r = result{err: early}
	} else if a.malformed != nil {
		r = result{err: &outcome.Park{Reason: "malformed", Err: a.malformed}}
	} else if h, known := w.handler(a.Kind); known {
		r = w.call(ctx, h, a)
	} else {
		r = result{err: &outcome.Park{Reason: "unknown_kind", Err: fmt.Errorf("no handler registered for kind %q", a.Kind)}}
	}
	normal = true
}

// watch starts, once, the watch of an attempt told to stop: CancelGrace
// for its handler to return (graceWatch), and a stuck report if it does
// not (watchStopped). Callers call it once they have seen a.cancel set
// (under a.mu), which execute does after what it reads.
func (a *Attempt) watch() {
	a.watchOnce.Do(func() {
		w := a.ctl.w
		returned := a.returnedChan()
		go w.graceWatch(a.ctl.ctx, a, returned)
		w.watchStopped(a.ctl.ctx, a, returned)
	})
}

// returnedChan is a channel closed once the handler has returned, made
// at the first call (by a watch: most attempts never need one).
func (a *Attempt) returnedChan() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.returned == nil {
		a.returned = make(chan struct{})
		if a.hasReturned {
			close(a.returned)
		}
	}
	return a.returned
}

// handlerReturned records that the handler returned, closing the
// returnedChan channel if it was made, and returns the cause ctx (the
// attempt's) was cancelled for by then, if it was. Read under mu, with
// hasReturned set: abandon cancels a running handler under mu, and leaves
// one that has returned to ack its outcome.
func (a *Attempt) handlerReturned(ctx context.Context) (cause error) {
	a.mu.Lock()
	a.hasReturned = true
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	if a.returned != nil {
		close(a.returned)
	}
	a.mu.Unlock()
	return cause
}

// graceWatch gives a cancelled handler CancelGrace to return, then settles
// its job without it. An attempt whose outcome was known before (an
// isolated child replied, and its handler is winding the child down,
// within its own bounds) is left to its handler, which settles it by that
// outcome, unless its lease was lost.
func (w *Worker) graceWatch(ctx context.Context, a *Attempt, returned <-chan struct{}) {
	g := w.clk.NewTimer(w.opts.CancelGrace)
	defer g.Stop()
	select {
	case <-returned:
		return
	case <-g.C():
		// both ready at once (it returned as the grace ran out): select
		// picks either, and the runner settles a returned handler by its
		// outcome
		select {
		case <-returned:
			return
		default:
		}
	}
	if a.state.Decided() && !errors.Is(context.Cause(ctx), ErrLeaseLost) {
		return
	}
	if a.settled.CompareAndSwap(false, true) {
		w.log.Warn("handler ignored cancellation; settling its job without it",
			"job", a.ID, "kind", a.Kind, "cause", context.Cause(ctx))
		w.conclude(a, a.trackedFailure(), false, context.Cause(ctx))
	}
}

// trackedFailure is the first failure of the attempt's tracked goroutines
// (a panic, with its stack, or an error), as join would settle it had the
// handler returned; zero when none failed. The attempt is then settled as
// that failure says: a panic charges a crash whether or not the handler
// heeds its cancellation.
func (a *Attempt) trackedFailure() result {
	c := &a.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.tr.fail; f != nil {
		return *f
	}
	return result{}
}

// conclude acks an attempt's outcome (when there is one to ack) and retires
// it; exactly one caller per attempt gets here.
func (w *Worker) conclude(a *Attempt, r result, returned bool, cause error) {
	var res store.AckResult // the ack's answer; zero when there is nothing to ack
	defer w.busy.Done()
	defer func() {
		w.mu.Lock()
		delete(w.inflight, a)
		w.mu.Unlock()
		if w.sig.Settled.Enabled() {
			w.sig.Settled.Signal(settledSignal(a, res, cause))
		}
	}()
	ack, ok := w.settle(a, r, returned, cause)
	if !ok {
		o := w.describe(a, r, cause, false, store.Ack{}, store.AckResult{}) // logging.go
		w.endSpan(a, r, cause, false, ack, store.AckResult{}, &o)
		w.observe(a, &o, store.Ack{})
		return
	}
	if w.ev != nil {
		w.acking(a) // events.go
	}
	ack.Resend = w.ackResend(a)
	ack.GiveUp = w.clk.Now().Add(ack.Resend) // not from when its call starts: it may queue behind others
	res = w.ack(a.ref.Partition, ack)
	// one telling of the outcome for its metrics, span, record and event
	o := w.describe(a, r, cause, true, ack, res)
	w.endSpan(a, r, cause, true, ack, res, &o)
	w.noteDeath(a, ack, res, r.err)
	w.observe(a, &o, ack)
}

// startSpan starts a's span (startAttempt) and returns the handler's
// context with it. The tracer provider is the caller's (its span
// processors, and the propagator that reads the job's trace context): a
// panic there, on the runner goroutine before the handler's recovery,
// ended the process, every job in flight with it. It is logged, and the
// attempt runs without a span.
func (w *Worker) startSpan(a *Attempt) context.Context {
	if ctx, ok := callback(w, a, "starting the attempt's span panicked; the attempt runs without one", func() context.Context {
		return w.tel.startAttempt(&a.vctx, a, w.clk.Now())
	}); ok {
		return ctx
	}
	a.tel.span = nil // what it started, if anything, is not ended
	return &a.vctx
}

// endSpan ends a's span and counts its outcome (endAttempt), after its
// ack: a panic of the caller's tracer or meter provider there (a span
// processor's OnEnd, an exporter a simple span processor calls) is
// logged, as startSpan's is, and its job is settled as its ack says.
func (w *Worker) endSpan(a *Attempt, r result, cause error, acked bool, ack store.Ack, res store.AckResult, o *settled) {
	callback(w, a, "ending the attempt's span panicked", func() struct{} {
		w.tel.endAttempt(a, r, cause, acked, ack, res, o)
		return struct{}{}
	})
}

// settledSignal is the test signal of a concluded attempt: the state its
// ack wrote, or why none was written.
func settledSignal(a *Attempt, res store.AckResult, cause error) testsignal.Settled {
	s := testsignal.Settled{Worker: a.Worker, JobID: a.ID, Fence: a.Fence, By: testsignal.Ack, State: res.State, Err: res.Err}
	if s.State == "" && s.Err == nil {
		s.Err = cause // nothing to ack: the lease was lost
	}
	return s
}

func (w *Worker) timeout(a *Attempt) time.Duration {
	if a.timeout > 0 {
		return a.timeout
	}
	if d, ok := w.opts.KindTimeout[a.Kind]; ok {
		return d
	}
	return w.opts.Timeout
}

// settle decides the ack for an attempt; ok is false when there is nothing
// to ack (the lease is already lost).
func (w *Worker) settle(a *Attempt, r result, returned bool, cause error) (store.Ack, bool) {
	ack := store.Ack{Lease: a.storeLease()}
	switch {
	case errors.Is(cause, ErrLeaseLost):
		return ack, false
	case r.panic != nil:
		ack.Code, ack.Reason = store.CodeCrash, "panic"
		ack.Message, ack.Data = fmt.Sprintf("panic: %v", r.panic), r.stack
		return ack, true
	case returned && r.err == nil:
		ack.Code, ack.Data, ack.Started = store.CodeOK, r.data, a.Claimed
		if fx := a.state.Final(); len(fx) > 0 {
			// '#' is in no step name (step.validName): a step cannot be named
			// like the completion, whose relayed effects its commit would mark
			ack.Effects, ack.Commit = fx, a.state.CommitName("#complete")
			ack.Delay = w.retryDelay(a, ErrEffectsFailed) // should the effects fail
		}
		return ack, true
	case errors.Is(cause, ErrTimeout):
		ack.Code, ack.Reason, ack.Message = store.CodeRetry, "timeout", errText(cause, r.err)
		ack.Delay = w.retryDelay(a, cause)
		return ack, true
	case errors.Is(cause, ErrDeadline):
		ack.Code, ack.Message = store.CodeDeadline, errText(cause, r.err)
		return ack, true
	case errors.Is(cause, ErrShutdown):
		ack.Code = store.CodeRelease
		return ack, true
	}
	if r.err == nil { // settled without the handler for another cause (a failed tracked goroutine)
		r.err = cause
	}
	return w.classify(a, r.err), true
}

// classify maps a returned error to its ack.
func (w *Worker) classify(a *Attempt, err error) store.Ack {
	ack := store.Ack{Lease: a.storeLease(), Message: err.Error()}
	switch c := outcome.Classify(err); {
	case c.Kind == outcome.KindCrash:
		// a CrashError of no Reason is still a class: an error record of
		// none reads as nothing in listings, logs and metrics
		ack.Code, ack.Reason, ack.Data = store.CodeCrash, cmp.Or(c.Crash.Reason, outcome.CrashClass), c.Crash.Detail
	case c.Kind == outcome.KindSnooze:
		ack.Code, ack.Delay, ack.Message = store.CodeSnooze, c.Snooze.Delay, ""
	case c.Kind == outcome.KindRateLimited:
		ack.Code, ack.Delay, ack.Message = store.CodeFree, c.RateLimited.Delay, ""
	case c.Kind == outcome.KindSkip:
		ack.Code, ack.Message = store.CodeSkip, c.Skip.Reason
	case c.Kind == outcome.KindRevoke:
		ack.Code, ack.Message = store.CodeRevoke, c.Revoke.Reason
	case c.Kind == outcome.KindPark:
		ack.Code, ack.Reason = store.CodePark, c.Park.Reason
	case c.Kind == outcome.KindWait:
		ack.Code, ack.Message, ack.Data = store.CodeWait, c.Wait.Step, []byte(strconv.Itoa(c.Wait.Count))
		if len(c.Wait.Children) > 0 {
			ack.Data = store.WaitSpec(c.Wait.Children)
		}
		ack.Reason, ack.Delay = "a", c.Wait.Recheck
		if c.Wait.FailFast {
			ack.Reason = "f"
		}
	case c.Kind == outcome.KindSuspend:
		spec, err := store.SuspendSpec(c.Suspend)
		if err != nil {
			ack.Code, ack.Reason, ack.Message = store.CodePark, "invalid_wait", err.Error()
			break
		}
		ack.Code, ack.Message, ack.Data = store.CodeSuspend, "", []byte(spec)
	case w.nonConsuming(a, err):
		ack.Code, ack.Message = store.CodeFree, ""
	default:
		ack.Code, ack.Reason = store.CodeRetry, "error"
		ack.Delay = w.retryDelay(a, err)
	}
	return ack
}

// errText is the message of an attempt stopped for cause whose handler
// returned err: the cause, then err unless it only says the context ended
// or is the cause again (context.Cause returned, or wrapped: an isolated
// child killed for it), which would tell the cause twice.
func errText(cause, err error) string {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, cause) {
		return cause.Error()
	}
	return cause.Error() + ": " + err.Error()
}
