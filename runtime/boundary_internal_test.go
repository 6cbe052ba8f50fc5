package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestStepBoundaryHooks: what the worker tells the step boundary
// (attempt.State.Lost, Expired) locally: the lease counts as possibly
// expired once the worker's clock passes its own estimate of the lease's
// end, and as lost once an operator's cancellation or a lost renewal
// cancelled the attempt, with that cause.
func TestStepBoundaryHooks(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	clk := NewFakeClock(start)
	w := &Worker{clk: clk}
	a := &Attempt{lease: 10 * time.Second, leaseEnd: start.Add(10 * time.Second)}
	a.state = attempt.New(nil, keys.Ref{}, store.Lease{}, nil)
	w.track(a)
	ctx, cancel := context.WithCancelCause(context.Background())
	a.ctl.ctx, a.cancel = ctx, cancel
	a.watchOnce.Do(func() {}) // no grace watch: this worker runs none

	clk.Advance(10 * time.Second)
	if a.state.Host.Expired() {
		t.Error("expired at the lease's end, want only past it")
	}
	clk.Advance(time.Millisecond)
	if !a.state.Host.Expired() {
		t.Error("not expired past the lease's end")
	}
	a.mu.Lock()
	a.leaseEnd = clk.Now().Add(10 * time.Second) // a renewal
	a.mu.Unlock()
	if a.state.Host.Expired() {
		t.Error("expired after a renewal")
	}

	if err := a.state.Host.Lost(); err != nil {
		t.Fatalf("Lost before any loss: %v", err)
	}
	a.cancelled() // an operator's cancellation arrived
	if err := a.state.Host.Lost(); !errors.Is(err, ErrCancelled) {
		t.Errorf("Lost after the cancellation: %v, want ErrCancelled", err)
	}
	select {
	case <-a.LeaseLost():
	default:
		t.Error("LeaseLost not closed")
	}

	// A timeout does not lose the lease; a loss after it still shows.
	b := &Attempt{lease: time.Second, leaseEnd: start.Add(time.Hour)}
	b.state = attempt.New(nil, keys.Ref{}, store.Lease{}, nil)
	w.track(b)
	ctx, cancel = context.WithCancelCause(context.Background())
	b.ctl.ctx, b.cancel = ctx, cancel
	b.watchOnce.Do(func() {})
	b.stop(ErrTimeout)
	if err := b.state.Host.Lost(); err != nil {
		t.Errorf("Lost after a timeout: %v, want nil", err)
	}
	b.lose()
	if err := b.state.Host.Lost(); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Lost after a lost renewal: %v, want ErrLeaseLost", err)
	}
}

// BenchmarkStepBoundary is the default step boundary's cost, with the
// hooks a worker sets: no round trip, a few context, channel and clock
// reads.
func BenchmarkStepBoundary(b *testing.B) {
	w := &Worker{clk: wallClock{}}
	a := &Attempt{lease: time.Minute, leaseEnd: time.Now().Add(time.Hour)}
	a.state = attempt.New(nil, keys.Ref{}, store.Lease{}, nil)
	w.track(a)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	a.ctl.ctx = ctx
	ctx = attempt.With(context.WithValue(ctx, attemptKey{}, a), a.state)
	for b.Loop() {
		if err := a.state.Check(ctx, false); err != nil {
			b.Fatal(err)
		}
	}
}
