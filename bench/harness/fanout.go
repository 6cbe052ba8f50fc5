package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/sluicetype"
)

// FanParent is the fan-out parent: it spawns N FanChild jobs in one step
// and joins on their results.
type FanParent struct {
	N int
}

// Kind names the job type.
func (FanParent) Kind() string { return "bench.fanout.parent" }

// FanChild is a fan-out child: a no-op whose result is I.
type FanChild struct {
	I int
}

// Kind names the job type.
func (FanChild) Kind() string { return "bench.fanout.child" }

// fanoutResult is the fan-out scenario's report.
type fanoutResult struct {
	Children    int `json:"children"`
	Concurrency int `json:"concurrency"`
	// Seconds runs from just before the parent's Enqueue to its completion
	// acked. The phases below, from timestamps taken in the handlers, add
	// up to it.
	Seconds float64 `json:"seconds"`
	// StartSeconds: until the parent's handler started (enqueued, the
	// worker woken, the parent claimed).
	StartSeconds float64 `json:"start_seconds"`
	// SpawnSeconds: from then until flow.Spawn returned (the children
	// planned and enqueued, the step checkpointed).
	SpawnSeconds float64 `json:"spawn_seconds"`
	// ChildrenSeconds: from then until the last child's handler returned.
	ChildrenSeconds float64 `json:"children_seconds"`
	// JoinSeconds: from then until the parent's handler returned with
	// every result (the last acks, the parent woken, claimed and run
	// again, flow.Join reading the results).
	JoinSeconds float64 `json:"join_seconds"`
	// AckSeconds: from then until the parent's completion was acked.
	AckSeconds     float64 `json:"ack_seconds"`
	ChildrenPerSec float64 `json:"children_per_sec"`
	// ParentRuns is how many times the parent's handler ran: 2 when its
	// wait suspended it once.
	ParentRuns int64 `json:"parent_runs"`
	// Redis is the cost of the whole fan-out per child.
	Redis redisCost `json:"redis_per_child"`
}

// fanStamps are the instants the handlers record, in UnixNano, and how
// the parent ended.
type fanStamps struct {
	started, spawned      atomic.Int64
	lastChild, parentDone atomic.Int64
	parentRuns            atomic.Int64
	done                  chan struct{} // closed when the parent ended
	once                  sync.Once
	err                   error // why the parent failed; read after done
}

// end records that the parent ended, having failed with err if not nil.
func (st *fanStamps) end(err error) {
	st.once.Do(func() {
		st.parentDone.Store(time.Now().UnixNano())
		st.err = err
		close(st.done)
	})
}

// runFanout enqueues one FanParent of cfg.Children children to an idle,
// warmed-up worker and times it until the parent completed.
func runFanout(ctx context.Context, t *target, cfg config) (res *fanoutResult, err error) {
	n := cfg.Children
	t.progress("fanout: 1 parent, %d children", n)
	ns := newNamespace("fanout")
	defer func() { err = errors.Join(err, t.cleanup(context.WithoutCancel(ctx), ns)) }()

	reg := flow.NewRegistry()
	st := &fanStamps{done: make(chan struct{})}
	if err := registerFanout(reg, st); err != nil {
		return nil, err
	}
	client, w, err := startWarm(ctx, t, reg, ns, cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	defer w.stop()

	before, err := t.takeSample(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := client.Enqueue(ctx, FanParent{N: n}); err != nil {
		return nil, fmt.Errorf("enqueueing the parent: %w", err)
	}
	select {
	case <-st.done:
		if st.err != nil {
			return nil, fmt.Errorf("the parent failed: %w", st.err)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the parent: %w (%d runs)", context.Cause(ctx), st.parentRuns.Load())
	}
	if err := w.stop(); err != nil {
		return nil, fmt.Errorf("stopping the worker: %w", err)
	}
	total := time.Since(start)
	after, err := t.takeSample(ctx)
	if err != nil {
		return nil, err
	}
	at := func(stamp *atomic.Int64) time.Duration { return time.Unix(0, stamp.Load()).Sub(start) }
	started, spawned, lastChild, parentDone := at(&st.started), at(&st.spawned), at(&st.lastChild), at(&st.parentDone)
	return &fanoutResult{
		Children: n, Concurrency: cfg.Concurrency, Seconds: total.Seconds(),
		StartSeconds: started.Seconds(), SpawnSeconds: (spawned - started).Seconds(),
		ChildrenSeconds: (lastChild - spawned).Seconds(), JoinSeconds: (parentDone - lastChild).Seconds(),
		AckSeconds: (total - parentDone).Seconds(), ChildrenPerSec: float64(n) / total.Seconds(),
		ParentRuns: st.parentRuns.Load(), Redis: costSince(before, after, n),
	}, nil
}

// registerFanout adds the parent's and the children's handlers to reg;
// they record their instants in st and close st.done once the parent has
// every child's result.
func registerFanout(reg *flow.Registry, st *fanStamps) error {
	err := flow.RegisterResult(reg, func(_ context.Context, job *flow.Job[FanChild]) (int, error) {
		now := time.Now().UnixNano()
		for last := st.lastChild.Load(); now > last; last = st.lastChild.Load() {
			if st.lastChild.CompareAndSwap(last, now) {
				break
			}
		}
		return job.Args.I, nil
	})
	if err != nil {
		return err
	}
	return flow.RegisterResult(reg, func(ctx context.Context, job *flow.Job[FanParent]) (int, error) {
		st.started.CompareAndSwap(0, time.Now().UnixNano())
		st.parentRuns.Add(1)
		items := make([]flow.Item, job.Args.N)
		for i := range items {
			items[i] = flow.Item{Args: FanChild{I: i}}
		}
		// Any error but Join's wait fails the benchmark at once, rather
		// than at its timeout after retries.
		kids, err := flow.Spawn(ctx, "spawn", items...)
		if err != nil {
			st.end(fmt.Errorf("spawn: %w", err))
			return 0, err
		}
		st.spawned.CompareAndSwap(0, time.Now().UnixNano())
		results, err := flow.Join[int](ctx, kids, flow.CollectAll)
		if wait := (*sluicetype.WaitingError)(nil); errors.As(err, &wait) {
			return 0, err // suspended while children run
		} else if err != nil {
			st.end(fmt.Errorf("join: %w", err))
			return 0, err
		}
		sum, n := 0, job.Args.N
		for _, r := range results {
			if r.State != flow.StateCompleted {
				err = errors.Join(err, fmt.Errorf("child %d %s: %s", r.Index, r.State, r.Error))
			}
			sum += r.Result
		}
		if err == nil && (len(results) != n || sum != n*(n-1)/2) {
			err = fmt.Errorf("%d results summing to %d, want %d summing to %d", len(results), sum, n, n*(n-1)/2)
		}
		st.end(err)
		if err != nil {
			return 0, flow.Skip(err.Error())
		}
		return sum, nil
	})
}
