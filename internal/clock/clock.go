// Package clock lets the runtime's timers run on real time or on a fake
// clock that tests advance by hand, so no test sleeps through a backoff or
// a lease.
package clock

import (
	"context"
	"time"
)

// Clock tells time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer fires once on its channel after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// WithDeadlineCause is context.WithDeadlineCause on clk: on the real clock
// it is exactly that (so ctx.Deadline reports it); on a fake clock the
// context is cancelled with cause when the fake time reaches at.
func WithDeadlineCause(ctx context.Context, clk Clock, at time.Time, cause error) (context.Context, context.CancelFunc) {
	if _, ok := clk.(Real); ok {
		return context.WithDeadlineCause(ctx, at, cause)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(at.Sub(clk.Now()), func() { cancel(cause) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
