package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// Errors of the lease-control surface.
var (
	// ErrNoAttempt: the context (or Attempt) is not that of an attempt run
	// by a Worker.
	ErrNoAttempt = errors.New("sluice: no running attempt in this context")
	// ErrInvalidArgument: a lease-control call got a bad argument.
	ErrInvalidArgument = errors.New("sluice: invalid argument")
	// ErrTrackedFailed is the cause of an attempt's cancellation when one
	// of its tracked goroutines (Go) failed; it wraps that failure.
	ErrTrackedFailed = errors.New("sluice: a tracked goroutine failed")
	// ErrAttemptDone: Go was called after the handler returned and its
	// tracked goroutines finished, or ReportProgress after the attempt's
	// outcome was settled.
	ErrAttemptDone = errors.New("sluice: the attempt is over")
)

// control is an attempt's share of the reliability machinery: lease
// control, progress, tracked goroutines and what the stuck watch needs.
type control struct {
	w   *Worker
	ctx context.Context // the handler's context, once execute has built it
	gid atomic.Uint64   // the handler's goroutine
	// gone says the lease is lost (markLost); lost is closed then, made
	// only when someone waits on it (LeaseLost): most attempts never do,
	// and a channel is an allocation.
	gone   atomic.Bool
	lostMu sync.Mutex
	lost   chan struct{}

	mu        sync.Mutex
	progress  time.Time // last progress (worker clock)
	stoppedAt time.Time // when the attempt was told to stop
	reported  [2]bool   // stuck reports made, by case
	rep       progressState
	tr        trackedState
}

// track sets up the attempt's control before it starts, and makes the
// worker the host of its step state (host.go).
func (w *Worker) track(a *Attempt) {
	c := &a.ctl
	c.w, c.progress = w, w.clk.Now()
	a.host.a = a
	a.state.Host = &a.host
}

// lostCause is why the attempt's lease is known to be gone (ErrLeaseLost,
// or ErrCancelled after an operator's cancellation), nil while it is not.
// The handler's context is cancelled just before LeaseLost closes: either
// tells.
func (a *Attempt) lostCause() error {
	if ctx := a.ctl.ctx; ctx != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLost) {
			return cause
		}
	}
	if a.ctl.gone.Load() {
		return ErrLeaseLost
	}
	return nil
}

// progressed notes progress now.
func (c *control) progressed() {
	now := c.w.clk.Now()
	c.mu.Lock()
	c.progress = now
	c.mu.Unlock()
}

// markLost records that the lease is lost, and closes the LeaseLost
// channel if it was made.
func (c *control) markLost() {
	c.lostMu.Lock()
	if !c.gone.Swap(true) && c.lost != nil {
		close(c.lost)
	}
	c.lostMu.Unlock()
}

// lostChan is the LeaseLost channel, made (closed already if the lease is
// lost) at the first call.
func (c *control) lostChan() <-chan struct{} {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.lost == nil {
		c.lost = make(chan struct{})
		if c.gone.Load() {
			close(c.lost)
		}
	}
	return c.lost
}

func (a *Attempt) leaseDuration() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lease
}

// ExtendLease renews the attempt's lease now, to run d from now (store
// time), and makes d its lease duration from now on: the background
// renewals keep extending it by d. d <= 0 keeps the current duration (a
// plain renewal, which also checks that the lease is still held); d must be
// longer than the worker's RenewInterval. It costs one round trip. One
// that shortens the lease is sent once a background renewal in flight, if
// any, has returned, and none is sent beside it (beginExtend); calls of
// one attempt go one at a time, each waiting its turn no longer than its
// ctx allows. A lease already lost is ErrLeaseLost, and the attempt is
// cancelled with that cause. A call whose ctx ended returns an error that
// is both ctx's cause (ErrShutdown on the attempt's context once the
// shutdown window ended) and ctx's error (context.Canceled).
func (a *Attempt) ExtendLease(ctx context.Context, d time.Duration) error {
	w := a.ctl.w
	if w == nil {
		return ErrNoAttempt
	}
	if d > 0 && d <= w.opts.RenewInterval {
		return fmt.Errorf("%w: lease %s must be longer than the renewal interval %s", ErrInvalidArgument, d, w.opts.RenewInterval)
	}
	if err := a.takeExtendTurn(ctx); err != nil {
		return err
	}
	defer a.endExtendTurn()
	if d <= 0 {
		d = a.leaseDuration() // read in its turn: an ExtendLease before it may have changed it
	}
	if a.ctl.gone.Load() {
		return ErrLeaseLost
	}
	done, ok := a.beginExtend(d)
	if !ok {
		return ErrLeaseLost
	}
	defer a.endExtend()
	if done != nil {
		a.signalExtending()
		select {
		case <-done:
		case <-ctx.Done():
			return ctxEnded(ctx)
		}
	}
	if a.ctl.gone.Load() {
		return ErrLeaseLost
	}
	sent := w.clk.Now() // no later than the renewal is numbered (renewer.renew)
	seq, ok := a.startRenewal(true)
	if !ok {
		return ErrLeaseLost
	}
	defer func() {
		if a.renewalReturned() { // given up meanwhile, and this renewal was the last in flight
			w.giveBack(a)
		}
	}()
	lost, late, err := w.st.Renew(ctx, a.ref.Partition, []store.Renewal{{Lease: a.storeLease(), Duration: d, Seq: seq}})
	if err != nil {
		// it may still reach Redis and apply, unless a later renewal
		// does first: one that shortens the lease ends it sooner then
		a.shortenIfApplied(seq, sent.Add(d))
		if ctx.Err() != nil {
			return ctxEnded(ctx)
		}
		return err
	}
	if len(lost) > 0 {
		if lost[0].State == stateCancelled { // as renewAll does
			a.cancelled()
		} else {
			a.lose()
		}
		return ErrLeaseLost
	}
	// lost by the worker's own clock while the call was in flight (expire
	// decides that under mu, as this moves leaseEnd): the handler is
	// cancelled and nothing of the attempt is acked, so it must not take
	// the extension for a held lease
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lapsed || a.ctl.gone.Load() {
		return ErrLeaseLost
	}
	a.lease = d // the renewals after it carry d
	if len(late) > 0 {
		// a renewal of the loop sent beside it ran first, with the older
		// duration or d: the lease ends as that one set it, no earlier
		// than overlapEnd (it started while this call was under way), and
		// the loop's next renewal carries d
		if a.overlapped {
			a.reckonLocked(seq, a.overlapEnd)
		}
		return nil
	}
	end := sent.Add(d)
	if a.overlapped && a.overlapEnd.Before(end) {
		// beside a renewal of the older, shorter duration, which Redis may
		// have run after this call: the lease may end as that renewal
		// would have it, until the next renewal, which carries d
		end = a.overlapEnd
	}
	a.reckonLocked(seq, end)
	return nil
}

// ctxEnded is what a lease-control call whose ctx ended returns: ctx's
// cause (ErrShutdown, ErrTimeout, ... on the attempt's context), and
// ctx.Err(), both for errors.Is. The store call's error only says
// "context canceled", and is neither.
func ctxEnded(ctx context.Context) error {
	cause, err := context.Cause(ctx), ctx.Err()
	if errors.Is(cause, err) {
		return cause
	}
	return fmt.Errorf("%w: %w", cause, err)
}

// shortenIfApplied reckons with the end that renewal seq, whose call
// failed, gives the lease if it reached Redis anyway, when that is
// earlier than the end reckoned: unless a later renewal's answer has
// been read, after which Redis refuses it.
func (a *Attempt) shortenIfApplied(seq int64, end time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq > a.reckoned && end.Before(a.leaseEnd) {
		a.leaseEnd = end
		a.movedLocked()
	}
}

// LeaseLost returns a channel closed once the attempt's lease is known to
// be lost (a renewal, ExtendLease or a step commit found it gone). The
// handler's context is cancelled with cause ErrLeaseLost at the same time.
// It returns nil (never closed) for an Attempt not run by a Worker.
func (a *Attempt) LeaseLost() <-chan struct{} {
	if a.ctl.w == nil {
		return nil
	}
	return a.ctl.lostChan()
}

// ExtendLease is Attempt.ExtendLease on the attempt running in ctx.
func ExtendLease(ctx context.Context, d time.Duration) error {
	a, ok := AttemptFrom(ctx)
	if !ok {
		return ErrNoAttempt
	}
	return a.ExtendLease(ctx, d)
}

// LeaseLost is Attempt.LeaseLost of the attempt running in ctx (nil when
// there is none).
func LeaseLost(ctx context.Context) <-chan struct{} {
	a, ok := AttemptFrom(ctx)
	if !ok {
		return nil
	}
	return a.LeaseLost()
}

// ReportProgress is Attempt.ReportProgress on the attempt running in ctx.
func ReportProgress(ctx context.Context, percent float64, state string) error {
	a, ok := AttemptFrom(ctx)
	if !ok {
		return ErrNoAttempt
	}
	return a.ReportProgress(ctx, percent, state)
}

// Go is Attempt.Go on the attempt running in ctx; f gets a context derived
// from ctx.
func Go(ctx context.Context, f func(ctx context.Context) error) error {
	a, ok := AttemptFrom(ctx)
	if !ok {
		return ErrNoAttempt
	}
	return a.goWith(ctx, f)
}
