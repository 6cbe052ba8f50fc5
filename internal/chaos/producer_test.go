package chaos

// The producer: enqueues ledger jobs, and a few bad-effect jobs among
// them, while the chaos goes on.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// producer keeps about backlog ledger jobs available, so that the workers
// always have work for the faults to interrupt, without piling up more
// than a final worker can drain. Job n has the ID "j<n>": an enqueue whose
// answer was lost (Redis restarted) is sent again and is then a no-op if
// the first one was written, so every job the producer counts exists.
// Alongside ledger job badEvery*k + badEvery/2 goes bad-effect job k, ID
// "b<k>", in the same call.
type producer struct {
	c       *flow.Client
	backlog int

	// pending is the size of a batch whose enqueue failed: it is sent
	// again, whole, before anything else (part of it may exist).
	pending int

	mu      sync.Mutex
	ids     []string // acknowledged, job n at index n
	bad     []string // bad-effect jobs acknowledged, job k at index k
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
		st, err := admin.New(p.c).QueueStats(ctx, "default", time.Minute)
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
	items := make([]flow.Item, 0, n+n/badEvery+1)
	var bad []int // the bad-effect jobs of the call, after the ledger jobs
	for i := range n {
		items = append(items, flow.Item{Args: ledgerJob{N: next + i, Pad: padFor(next + i)}, Opts: []flow.EnqueueOption{flow.WithID(fmt.Sprintf("j%d", next+i))}})
		if (next+i)%badEvery == badEvery/2 {
			bad = append(bad, (next+i)/badEvery)
		}
	}
	for _, k := range bad {
		items = append(items, flow.Item{Args: badEffectJob{K: k, Mode: k % badModes}, Opts: []flow.EnqueueOption{
			flow.WithID(badJobID(k)), flow.WithMaxAttempts(badMaxAttempts)}})
	}
	res, err := p.c.EnqueueMany(ctx, items...)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range res {
		if r.Err != nil {
			p.errs = append(p.errs, fmt.Errorf("job %d of a call (j%d...): %w", i, next, r.Err))
		}
		if i < n {
			p.ids = append(p.ids, r.ID)
		} else {
			p.bad = append(p.bad, r.ID)
		}
	}
	return nil
}

// result returns the acknowledged ledger jobs' IDs, the retried calls and
// the unexpected answers.
func (p *producer) result() ([]string, int, []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids, p.retries, p.errs
}

// badJobs returns the acknowledged bad-effect jobs' IDs, job k at index k.
func (p *producer) badJobs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad
}
