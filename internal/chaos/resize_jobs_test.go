package chaos

// The jobs of TestChaosResize, its producer and its in-process workers.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

type rzLedger struct{ N int }

func (rzLedger) Kind() string { return "rz_ledger" }

type rzParent struct{ N int }

func (rzParent) Kind() string { return "rz_parent" }

// rzTick is the job of the schedule rzSchedule, enqueued to rzKids at
// every tick; its ledger fields are named by its ID ("t:sched:...").
type rzTick struct{}

func (rzTick) Kind() string { return "rz_tick" }

const rzSchedule = "rz"

type rzChild struct{ P, I int }

func (rzChild) Kind() string { return "rz_child" }

// rzLedgerKey is the hash (outside every partition's slot: its effects
// are relayed through the outbox) in which each job's effects count.
func rzLedgerKey(ns string) string { return ns + ":rzledger" }

// spawnLog records the child IDs each run of a parent's spawn returned.
type spawnLog struct {
	mu  sync.Mutex
	ids map[int][][]string
}

func (s *spawnLog) add(n int, ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seen := range s.ids[n] {
		if slices.Equal(seen, ids) {
			return
		}
	}
	s.ids[n] = append(s.ids[n], slices.Clone(ids))
}

// rzRegistry runs the three kinds: each commits one durable step's effect
// and a completion effect, counted in rzLedgerKey; a parent spawns
// rzFanout children into rzKids between the two, and joins them.
func rzRegistry(ns string, spawns *spawnLog) *flow.Registry {
	reg := flow.NewRegistry()
	ledger := rzLedgerKey(ns)
	work := func(ctx context.Context, name string) error {
		err := step.Do(ctx, "work", func(ctx context.Context) error {
			time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
			return step.Effect(ctx, idempotency.HIncrBy(ledger, name+":work", 1))
		})
		if err != nil {
			return err
		}
		return step.OnComplete(ctx, idempotency.HIncrBy(ledger, name+":done", 1))
	}
	must(flow.Register(reg, func(ctx context.Context, j *flow.Job[rzLedger]) error {
		return work(ctx, fmt.Sprintf("l%d", j.Args.N))
	}))
	must(flow.Register(reg, func(ctx context.Context, j *flow.Job[rzTick]) error {
		ref, ok := keys.ParseRef(ns, j.ID)
		if !ok {
			return fmt.Errorf("tick job ID %q", j.ID)
		}
		return work(ctx, "t:"+ref.Local)
	}))
	must(flow.Register(reg, func(ctx context.Context, j *flow.Job[rzChild]) error {
		return work(ctx, fmt.Sprintf("c%d.%d", j.Args.P, j.Args.I))
	}))
	must(flow.Register(reg, func(ctx context.Context, j *flow.Job[rzParent]) error {
		items := make([]flow.Item, rzFanout)
		for i := range items {
			items[i] = flow.Item{Args: rzChild{P: j.Args.N, I: i}, Opts: []flow.EnqueueOption{flow.WithQueue(rzKids)}}
		}
		ch, err := flow.Spawn(ctx, "fan", items...)
		if err != nil {
			return err
		}
		spawns.add(j.Args.N, ch.IDs)
		if _, err := flow.Join[struct{}](ctx, ch, flow.CollectAll); err != nil {
			return err
		}
		return step.OnComplete(ctx, idempotency.HIncrBy(ledger, fmt.Sprintf("p%d:done", j.Args.N), 1))
	}))
	return reg
}

// rzProducer enqueues ledger jobs (IDs l<N>) to rzKids and parents (p<N>)
// to rzParents, by turns through a client that read rzKids' layout at the
// start and never again unless refused (stale) and one that is fresh.
type rzProducer struct {
	stale, fresh *flow.Client
	rng          *rand.Rand

	// hold, held, stops the producer between two enqueues
	hold            sync.Mutex
	mu              sync.Mutex
	ledgers, parent []int
	ids             map[string]string // l<N>, p<N> -> the job's ID
	resized         int               // enqueues refused by a shrink (LayoutMismatchError.Resized) and made again
	takenAway       int               // enqueues refused by a shrink not yet recorded, and made again
	errs            []error
}

// enqueue adds one job, again while a resize refuses it: the queue shrank
// (Resized), or a shrink has taken the partition away and not yet
// recorded its count; both say to enqueue again.
func (p *rzProducer) enqueue(ctx context.Context, c *flow.Client, args flow.Args, id, queue string) (string, error) {
	for end := time.Now().Add(30 * time.Second); ; {
		r, err := c.Enqueue(ctx, args, flow.WithID(id), flow.WithQueue(queue))
		var lm *sluicetype.LayoutMismatchError
		switch {
		case errors.As(err, &lm) && lm.Resized:
			p.mu.Lock()
			p.resized++
			p.mu.Unlock()
		case errors.Is(err, flow.ErrLayoutMismatch) && time.Now().Before(end):
			p.mu.Lock()
			p.takenAway++
			p.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		default:
			return r.ID, err
		}
	}
}

func (p *rzProducer) staleClient() *flow.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stale
}

// setStale makes c the stale client.
func (p *rzProducer) setStale(c *flow.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stale = c
}

// one enqueues job n.
func (p *rzProducer) one(ctx context.Context, n int, parent bool, c *flow.Client) {
	var id, name string
	var err error
	if parent {
		name = fmt.Sprintf("p%d", n)
		id, err = p.enqueue(ctx, c, rzParent{N: n}, name, rzParents)
	} else {
		name = fmt.Sprintf("l%d", n)
		id, err = p.enqueue(ctx, c, rzLedger{N: n}, name, rzKids)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]string{}
	}
	p.ids[name] = id
	switch {
	case err != nil:
		p.errs = append(p.errs, fmt.Errorf("job %d (parent %v): %w", n, parent, err))
	case parent:
		p.parent = append(p.parent, n)
	default:
		p.ledgers = append(p.ledgers, n)
	}
}

// run enqueues a job every 2-10 ms until ctx ends, starting at job from.
func (p *rzProducer) run(ctx context.Context, from int) int {
	n := from
	for ctx.Err() == nil {
		p.hold.Lock()
		c := p.fresh
		if p.rng.IntN(2) == 0 {
			c = p.staleClient()
		}
		p.one(context.WithoutCancel(ctx), n, p.rng.IntN(3) == 0, c)
		p.hold.Unlock()
		n++
		time.Sleep(time.Duration(2+p.rng.IntN(9)) * time.Millisecond)
	}
	return n
}

// rzFleet is the in-process workers: two on rzKids (one with go-redis's
// re-sends off), restarted whenever rzKids' layout changes, as the
// procedure says; one on rzParents restarted with them, and one on
// rzParents never restarted, which keeps the count of rzKids it read at
// the start to place its children by. All reach Redis through the proxy.
type rzFleet struct {
	t         *testing.T
	reg       *flow.Registry
	ns        string
	rdb, bare redis.UniversalClient
	fresh     []*testkit.Worker
	stale     *testkit.Worker
	restarts  int
	bareErrs  int // Run's errors of the worker with no re-sends
}

func (f *rzFleet) opts(queue string) runtime.Options {
	return runtime.Options{
		Namespace: f.ns, Queues: map[string]int{queue: 1}, Concurrency: 4,
		Lease: 2 * time.Second, RenewInterval: 500 * time.Millisecond, MaintenanceInterval: 100 * time.Millisecond,
		IdlePoll: 50 * time.Millisecond, ShutdownWindow: 5 * time.Second,
		Backoff: func(int) time.Duration { return 5 * time.Millisecond },
	}
}

func (f *rzFleet) startFresh() {
	f.fresh = []*testkit.Worker{
		testkit.StartWorker(f.t, f.rdb, f.reg, f.opts(rzKids), nil),
		testkit.StartWorker(f.t, f.bare, f.reg, f.opts(rzKids), nil),
		testkit.StartWorker(f.t, f.rdb, f.reg, f.opts(rzParents), nil),
	}
}

// stopFresh stops the restarted workers. Run's error is tolerated from
// the one with go-redis's re-sends off (a lost reply fails its last call),
// and counted.
func (f *rzFleet) stopFresh() {
	for i, w := range f.fresh {
		when := "when stopped"
		select {
		case <-w.Done():
			when = "before it was stopped"
		default:
		}
		err := w.Stop()
		switch {
		case err != nil && i == 1:
			f.bareErrs++
			f.t.Logf("worker %s (no re-sends) ended %s: %v", w.ID(), when, err)
		case err != nil:
			f.t.Errorf("worker %s: %v", w.ID(), err)
		}
	}
	f.fresh = nil
}

// revive restarts the fleet if a restarted worker's Run ended.
func (f *rzFleet) revive() {
	for _, w := range f.fresh {
		select {
		case <-w.Done():
			f.restart()
			return
		default:
		}
	}
}

func (f *rzFleet) restart() {
	f.stopFresh()
	f.startFresh()
	f.restarts++
}

// startSchedulers runs two schedulers of rzSchedule (a tick a second, to
// rzKids), one on each of rdbs, until the returned stop, which waits for
// them. Neither is restarted when the queue is resized: each places its
// ticks by the count it read first, until refused.
func startSchedulers(t *testing.T, ns string, reg *flow.Registry, rdbs ...redis.UniversalClient) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, rdb := range rdbs {
		c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
		testkit.Must(t, err)
		s, err := flow.NewScheduler(c, flow.SchedulerOptions{Logger: testkit.Quiet})
		testkit.Must(t, err)
		testkit.Must(t, s.Add(flow.Schedule{Name: rzSchedule, Every: time.Second, Args: rzTick{}, Opts: []flow.EnqueueOption{flow.WithQueue(rzKids)}}))
		wg.Go(func() {
			if err := s.Run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("scheduler: %v", err)
			}
		})
	}
	stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
	})
	t.Cleanup(stop)
	return stop
}
