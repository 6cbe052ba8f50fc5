package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/lua"
)

// The proxy's faults in TestChaosLostReplies, on every script call: more
// than TestChaos's, since they are the only ones.
const (
	lostDropRate = 0.05
	lostDupRate  = 0.05
	// lostLease is the workers' lease: longer than TestChaos's, so that
	// a worker stalled a moment (a throttled container, a VM's stolen
	// time) still sends a late claim again in time
	lostLease = 2 * time.Second
	// lostDropHold: a claim's dropped reply has its connection held this
	// long first, one claim per lease at most (Proxy.SetLateDrops): past
	// half the workers' lease, 0.9 s short of it for the re-send and the
	// hand-back
	lostDropHold = lostLease * 55 / 100
)

// TestChaosLostReplies runs ledger jobs on worker processes whose only
// faults are lost replies and duplicated requests (the proxy's random
// faults on every script call; a claim's loss, one per lease at most,
// learnt only after 0.55 of a lease, as a read timeout would; no kill,
// stall, restart or cut), and checks
// what TestChaos cannot, since its kills charge a crash to a job claimed
// by a process killed before the job started (the safe choice): here no
// job is charged more crashes than it had attempts that reached its
// handler and did not complete it. A lost reply is not a crash: a claim,
// renewal or ack whose reply was lost and which Sluice or go-redis sent
// again must not end in a lease reaped from a job that never ran (the
// class of the claim re-send window's bug, 2026-12-05). Every job must
// also complete with its checkpoints, every effect applied once, and
// every job hash sit in the index its state names, the counters true.
func TestChaosLostReplies(t *testing.T) {
	t.Parallel()
	dur := chaosDuration(t) / 2
	ctx := context.Background()
	srv, proxy, seed := startProxied(t)
	proxy.SetRandom(lostDropRate, lostDupRate, seed, Commands(lua.Commands...))
	// a claim's loss learnt past half a lease: what it sends again must
	// still not cost the jobs it leased a crash
	proxy.SetLateDrops(lostDropHold, lostLease, func(a []string) bool {
		return len(a) > 1 && strings.EqualFold(a[0], "fcall") && a[1] == lua.Claim.Function()
	})
	cfg := workerConfig{
		Concurrency: 4, Lease: lostLease, Renew: lostLease / 4, Maintenance: 200 * time.Millisecond,
		NoRetries: true, // every other process: what Sluice sends again itself meets the faults
	}
	r := startLedgerRun(t, srv, proxy, cfg, &producer{backlog: backlog, ledgerOnly: true})
	f, ns := r.fleet, r.ns
	time.Sleep(dur)
	ids := r.drain(ctx)
	for len(f.live) > 0 {
		f.term(f.live[0])
	}
	dropped, duplicated := proxy.Fired()
	late := proxy.LateDropped()
	lst, ran := checkLedgerRun(ctx, t, srv.Addr(), ns, ids, f.starts.counts(), func(started int) int {
		return max(started-1, 0) // the attempt that completed it started too
	})
	summary := fmt.Sprintf("%s (seed %d): %d jobs, %d attempts started; script calls faulted at %g%% drop, %g%% duplicate: "+
		"%d replies dropped (%d claims' late), %d requests duplicated; %d crashes charged to %d jobs, %d attempts spent, %d stale writes refused",
		dur, seed, len(ids), ran, lostDropRate*100, lostDupRate*100, dropped, late, duplicated,
		lst.Crashes, lst.Crashed, lst.Attempts, f.staleSteps.Load()+f.staleOutcomes.Load())
	t.Log(summary)
	if dropped == 0 || late == 0 || duplicated == 0 || len(ids) == 0 {
		t.Errorf("not every fault happened: %s", summary)
	}
}

// ledgerRun is a run of ledger jobs on a fleet of worker processes that
// reach srv through proxy, while a producer enqueues them.
type ledgerRun struct {
	t     *testing.T
	ns    string
	rdb   redis.UniversalClient // srv's, not through the proxy
	c     *flow.Client          // on rdb
	fleet *fleet
	prod  *producer
	stop  func() // stops the producer, and waits for it
}

// startLedgerRun starts fleetSize worker processes with cfg (its Addr and
// NS set here: the proxy's, a new namespace) and prod (its client set
// here), producing until the run's drain.
func startLedgerRun(t *testing.T, srv *redisproc.Server, proxy *Proxy, cfg workerConfig, prod *producer) *ledgerRun {
	t.Helper()
	r := &ledgerRun{t: t, ns: redistest.NewNamespace(t), rdb: srv.Client(), prod: prod}
	t.Cleanup(func() { r.rdb.Close() })
	c, err := flow.NewClient(r.rdb, flow.ClientOptions{Namespace: r.ns})
	if err != nil {
		t.Fatal(err)
	}
	r.c, prod.c = c, c
	cfg.Addr, cfg.NS = proxy.Addr(), r.ns
	r.fleet = newFleet(t, cfg)
	for range fleetSize {
		r.fleet.start(cfg)
	}
	pctx, stopProducer := context.WithCancel(context.Background())
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		prod.run(pctx)
	}()
	r.stop = sync.OnceFunc(func() {
		stopProducer()
		<-produced
	})
	t.Cleanup(r.stop)
	return r
}

// drain stops the producer and waits until every job it enqueued has
// finished and every effect is relayed; it returns the jobs' IDs.
func (r *ledgerRun) drain(ctx context.Context) []string {
	t := r.t
	t.Helper()
	r.stop()
	ids, _, errs := r.prod.result()
	for _, err := range errs {
		t.Errorf("enqueue: %v", err)
	}
	drainLedgerJobs(ctx, t, r.c, r.rdb, r.ns, len(ids))
	return ids
}

// drainLedgerJobs waits until the queue "default" in ns holds n finished
// jobs and its outbox is empty.
func drainLedgerJobs(ctx context.Context, t *testing.T, c *flow.Client, rdb redis.UniversalClient, ns string, n int) {
	t.Helper()
	redistest.Within(t, drainTimeout, "every job finished and every effect relayed", func() (bool, string) {
		st, err := admin.New(c).QueueStats(ctx, "default", time.Minute)
		if err != nil {
			return false, err.Error()
		}
		outbox, err := rdb.XLen(ctx, keys.Partition{NS: ns, Queue: "default"}.Outbox()).Result()
		if err != nil {
			return false, err.Error()
		}
		done := st.Depth[flow.StateCompleted] + st.Depth[flow.StateArchived] + st.Depth[flow.StateQuarantined]
		return done >= int64(n) && outbox == 0,
			fmt.Sprintf("%d of %d jobs finished (%v), %d outbox entries", done, n, st.Depth, outbox)
	})
}

// checkLedgerRun checks, on a connection of its own to addr, the ledger
// jobs ids of a run in ns whose workers reported starts: each completed
// with its checkpoints and was charged at most maxCrashes(attempts that
// reached its handler) crashes; every effect was applied once; every job
// hash sits in the index its state names, the counters true. It returns
// the jobs' totals and the attempts started.
func checkLedgerRun(ctx context.Context, t *testing.T, addr, ns string, ids []string, starts map[string]int, maxCrashes func(started int) int) (lst ledgerStats, ran int) {
	t.Helper()
	direct := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { direct.Close() })
	c, err := flow.NewClient(direct, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for n, id := range ids {
		checkLedgerJob(ctx, t, c, n, id, &lst)
		info, err := c.Job(ctx, id)
		if err != nil {
			continue // reported by checkLedgerJob
		}
		s := starts[localID(id)]
		ran += s
		if most := maxCrashes(s); info.CrashAttempt > most {
			t.Errorf("job %s: %d crashes charged, %d attempts started, want at most %d; errors %+v",
				id, info.CrashAttempt, s, most, info.Errors)
		}
	}
	part := keys.Partition{NS: ns, Queue: "default"}
	fields := expectedFields(len(ids))
	checkLedger(t, direct, part.Tag()+":u:ledger", fields)
	checkLedger(t, direct, foreignLedger(ns), fields)
	for _, p := range partitionsOf(ctx, t, direct, ns, part) {
		ps, err := checkPartition(ctx, direct, p)
		if err != nil {
			t.Fatal(err)
		}
		ps.report(t, p)
	}
	return lst, ran
}

// attemptStarts counts the attempts that reached the ledger handler, per
// job (its ID in its partition), as the workers report them.
type attemptStarts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *attemptStarts) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[localID(id)]++
}

func (a *attemptStarts) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.n))
	for id, n := range a.n {
		out[id] = n
	}
	return out
}
