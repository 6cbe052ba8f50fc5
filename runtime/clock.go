package runtime

import (
	"context"
	"time"
)

// Clock is a worker's (or a client's) source of time and timers. The
// default is the wall clock (WallClock). A test gives workers and clients
// a FakeClock instead: they then use it, instead of Redis TIME, for every
// scheduling decision in Redis too, so the test can expire leases and
// backoffs without sleeping.
type Clock interface {
	Now() time.Time
	// NewTimer fires once on its channel after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// WallClock is the real clock: time.Now and the time package's timers.
func WallClock() Clock { return wallClock{} }

type wallClock struct{}

func (wallClock) Now() time.Time                            { return time.Now() }
func (wallClock) NewTimer(d time.Duration) Timer            { return realTimer{time.NewTimer(d)} }
func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// withDeadlineCause is context.WithDeadlineCause on clk: on the real clock
// it is exactly that (so ctx.Deadline reports it); on a fake clock the
// context is cancelled with cause when the fake time reaches at.
func withDeadlineCause(ctx context.Context, clk Clock, at time.Time, cause error) (context.Context, context.CancelFunc) {
	if _, ok := clk.(wallClock); ok {
		return context.WithDeadlineCause(ctx, at, cause)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(at.Sub(clk.Now()), func() { cancel(cause) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
