package chaos

// The producer: enqueues ledger jobs, and a few bad-effect jobs among
// them, while the chaos goes on.

import (
	"context"
	"fmt"
	"slices"
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
// "b<k>", in the same call; so do approval workflow k ("w<k>", alongside
// ledger job wfEvery*k + wfEvery/2) and nap job k ("z<k>", alongside
// napEvery*k + napEvery-1), and boxed job k ("x<k>", alongside
// boxedEvery*k + 1; boxed_test.go). Each workflow acknowledged is handed to
// onWorkflow (the signaller).
type producer struct {
	c       *flow.Client
	backlog int
	// onWorkflow, if set, is called with each workflow acknowledged.
	onWorkflow func(k int, id string, args approvalJob)
	// ledgerOnly: ledger jobs alone, none of the others
	ledgerOnly bool
	// slowPause, if set, is the Pause of every odd ledger job's steps
	slowPause time.Duration

	// pending is the size of a batch whose enqueue failed: it is sent
	// again, whole, before anything else (part of it may exist).
	pending int

	mu      sync.Mutex
	ids     []string // acknowledged, job n at index n
	bad     []string // bad-effect jobs acknowledged, job k at index k
	wf      []string // approval workflows acknowledged, workflow k at index k
	naps    []string // nap jobs acknowledged, job k at index k
	boxed   []string // boxed jobs acknowledged, job k at index k
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

// enqueue adds the next n jobs in one call, with the bad-effect jobs,
// workflows and nap jobs that go with them.
func (p *producer) enqueue(ctx context.Context, n int) error {
	p.mu.Lock()
	next := len(p.ids)
	p.mu.Unlock()
	items := make([]flow.Item, 0, n+n/badEvery+n/wfEvery+n/napEvery+n/boxedEvery+4)
	var bad, wf, naps, boxed []int // the other jobs of the call, after the ledger jobs in this order
	for i := range n {
		args := ledgerJob{N: next + i, Pad: padFor(next + i)}
		if (next+i)%2 == 1 {
			args.Pause = p.slowPause
		}
		items = append(items, flow.Item{Args: args, Opts: []flow.EnqueueOption{flow.WithID(fmt.Sprintf("j%d", next+i))}})
		if p.ledgerOnly {
			continue
		}
		if (next+i)%badEvery == badEvery/2 {
			bad = append(bad, (next+i)/badEvery)
		}
		if (next+i)%wfEvery == wfEvery/2 {
			wf = append(wf, (next+i)/wfEvery)
		}
		if (next+i)%napEvery == napEvery-1 {
			naps = append(naps, (next+i)/napEvery)
		}
		if (next+i)%boxedEvery == 1 {
			boxed = append(boxed, (next+i)/boxedEvery)
		}
	}
	for _, k := range bad {
		items = append(items, flow.Item{Args: badEffectJob{K: k, Mode: k % badModes}, Opts: []flow.EnqueueOption{
			flow.WithID(badJobID(k)), flow.WithMaxAttempts(badMaxAttempts)}})
	}
	for _, k := range wf {
		items = append(items, flow.Item{Args: approvalFor(k), Opts: []flow.EnqueueOption{flow.WithID(workflowID(k))}})
	}
	for _, k := range naps {
		items = append(items, flow.Item{Args: napFor(k), Opts: []flow.EnqueueOption{flow.WithID(napID(k))}})
	}
	for _, k := range boxed {
		items = append(items, flow.Item{Args: boxedJob{K: k, Pad: padFor(k)}, Opts: []flow.EnqueueOption{
			flow.WithID(boxedID(k))}})
	}
	res, err := p.c.EnqueueMany(ctx, items...)
	if err != nil {
		return err
	}
	p.mu.Lock()
	for i, r := range res {
		if r.Err != nil {
			p.errs = append(p.errs, fmt.Errorf("job %d of a call (j%d...): %w", i, next, r.Err))
		}
		switch j := i - n - len(bad); {
		case i < n:
			p.ids = append(p.ids, r.ID)
		case j < 0:
			p.bad = append(p.bad, r.ID)
		case j < len(wf):
			p.wf = append(p.wf, r.ID)
		case j < len(wf)+len(naps):
			p.naps = append(p.naps, r.ID)
		default:
			p.boxed = append(p.boxed, r.ID)
		}
	}
	got := slices.Clone(p.wf[len(p.wf)-len(wf):])
	p.mu.Unlock()
	if p.onWorkflow != nil {
		for i, k := range wf {
			p.onWorkflow(k, got[i], approvalFor(k))
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

// boxedJobs returns the acknowledged boxed jobs' IDs, job k at index k.
func (p *producer) boxedJobs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.boxed
}

// workflows returns the acknowledged workflows' and nap jobs' IDs, job k
// at index k.
func (p *producer) workflows() (wf, naps []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wf, p.naps
}
