package harness

import (
	"context"
	"fmt"
	"sync/atomic"
)

// countdown closes done once n events have been counted; handlers count
// their jobs with it.
type countdown struct {
	n    int
	left atomic.Int64
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{n: n, done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

// tick counts one event.
func (c *countdown) tick() {
	if c.left.Add(-1) == 0 {
		close(c.done)
	}
}

// wait blocks until every event was counted or ctx ends; the error then
// says how far it got.
func (c *countdown) wait(ctx context.Context, what string) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w (%d of %d done)", what, context.Cause(ctx), c.n-int(c.left.Load()), c.n)
	}
}
