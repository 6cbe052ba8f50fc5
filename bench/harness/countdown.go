package harness

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Countdown is done once n events have been counted; handlers count their
// jobs with it, and the run waits for it before it stops the clock. The
// bench/peers comparison counts asynq's tasks with it too.
type Countdown struct {
	n    int
	left atomic.Int64
	done chan struct{}
}

// NewCountdown returns a Countdown of n events.
func NewCountdown(n int) *Countdown {
	c := &Countdown{n: n, done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

// Tick counts one event; it is safe for concurrent use.
func (c *Countdown) Tick() {
	if c.left.Add(-1) == 0 {
		close(c.done)
	}
}

// Wait blocks until every event was counted or ctx ends; the error then
// starts with what and says how far it got.
func (c *Countdown) Wait(ctx context.Context, what string) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w (%d of %d done)", what, context.Cause(ctx), c.n-int(c.left.Load()), c.n)
	}
}
