package chaos

// The producer: enqueues ledger jobs while the chaos goes on.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// producer keeps about backlog ledger jobs available, so that the workers
// always have work for the faults to interrupt, without piling up more
// than a final worker can drain. Job n has the ID "j<n>": an enqueue whose
// answer was lost (Redis restarted) is sent again and is then a no-op if
// the first one was written, so every job the producer counts exists.
type producer struct {
	c       *flow.Client
	backlog int

	// pending is the size of a batch whose enqueue failed: it is sent
	// again, whole, before anything else (part of it may exist).
	pending int

	mu      sync.Mutex
	ids     []string // acknowledged, job n at index n
	retries int      // enqueue calls that failed and were sent again
	errs    []error  // unexpected answers
}

// run enqueues until ctx is cancelled, then settles a failed batch.
func (p *producer) run(ctx context.Context) {
	for ctx.Err() == nil {
		p.step(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	for end := time.Now().Add(procTimeout); p.pending > 0 && time.Now().Before(end); {
		p.step(context.Background())
		time.Sleep(20 * time.Millisecond)
	}
	if p.pending > 0 {
		p.mu.Lock()
		p.errs = append(p.errs, fmt.Errorf("a batch of %d jobs could not be enqueued within %s", p.pending, procTimeout))
		p.mu.Unlock()
	}
}

// step tops the backlog up, or sends the failed batch again.
func (p *producer) step(ctx context.Context) {
	n := p.pending
	if n == 0 {
		st, err := p.c.QueueStats(ctx, "default", time.Minute)
		if err != nil || st.Depth[flow.StateAvailable] >= int64(p.backlog) {
			return
		}
		n = p.backlog - int(st.Depth[flow.StateAvailable])
	}
	p.pending = 0
	if err := p.enqueue(ctx, n); err != nil {
		p.pending = n
		p.mu.Lock()
		p.retries++
		p.mu.Unlock()
	}
}

// enqueue adds the next n jobs in one call.
func (p *producer) enqueue(ctx context.Context, n int) error {
	p.mu.Lock()
	next := len(p.ids)
	p.mu.Unlock()
	items := make([]flow.Item, n)
	for i := range items {
		items[i] = flow.Item{Args: ledgerJob{N: next + i, Pad: padFor(next + i)}, Opts: []flow.EnqueueOption{flow.WithID(fmt.Sprintf("j%d", next+i))}}
	}
	res, err := p.c.EnqueueMany(ctx, items...)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range res {
		if r.Err != nil {
			p.errs = append(p.errs, fmt.Errorf("job j%d: %w", next+i, r.Err))
		}
		p.ids = append(p.ids, r.ID)
	}
	return nil
}

// result returns the acknowledged jobs' IDs, the retried calls and the
// unexpected answers.
func (p *producer) result() ([]string, int, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids, p.retries, p.errs
}
