package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// redirects is a go-redis hook for the node clients of a ClusterClient:
// it counts the redirections and refusals that the ClusterClient then
// follows or retries.
type redirects struct{ moved, ask, tryAgain atomic.Int64 }

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.count(err)
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			r.count(c.Err())
		}
		return err
	}
}

func (r *redirects) count(err error) {
	switch {
	case err == nil:
	case strings.HasPrefix(err.Error(), "MOVED "):
		r.moved.Add(1)
	case strings.HasPrefix(err.Error(), "ASK "):
		r.ask.Add(1)
	case strings.HasPrefix(err.Error(), "TRYAGAIN"):
		r.tryAgain.Add(1)
	}
}

// rig is one scenario: a namespace with a partitioned queue on the cluster,
// a producer and two workers, each on its own ClusterClient (seen by
// go-redis as redis.UniversalClient through Sluice's APIs).
type rig struct {
	t      *testing.T
	c      *redisproc.Cluster
	ns     string
	client *flow.Client
	l      *ledger
	redir  *redirects
	sig    *testsignal.Worker // of both workers

	mu  sync.Mutex
	ids []string
}

const rigPartitions = 6

// newRig starts a scenario whose jobs take work; gate, when not nil,
// holds the jobs of partition 0 until it is closed.
func newRig(t *testing.T, c *redisproc.Cluster, opts runtime.Options, gate chan struct{}) *rig {
	t.Helper()
	r := &rig{t: t, c: c, ns: wakeColocated(t, c), l: newLedger(), redir: &redirects{}, sig: testsignal.NewWorker()}
	parts := map[string]int{"default": rigPartitions}
	reg := registry(t, r.l, func(id string) {
		if gate != nil && partitionOf(id) == "0" {
			<-gate
		}
		time.Sleep(time.Millisecond) // work takes a moment: the cluster changes under jobs in flight
	})
	client := func() *redis.ClusterClient {
		// No periodic slot-map reload within the test: the clients must
		// learn a new topology from what their commands meet.
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClusterStateReloadInterval: time.Hour})
		t.Cleanup(func() { cc.Close() })
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(r.redir) })
		return cc
	}
	var err error
	r.client, err = flow.NewClient(client(), flow.ClientOptions{Namespace: r.ns, Registry: reg, Partitions: parts})
	testkit.Must(t, err)
	opts.Namespace, opts.Partitions, opts.Concurrency = r.ns, parts, 8
	opts.Lease, opts.MaintenanceInterval, opts.ShutdownWindow = 3*time.Second, 250*time.Millisecond, time.Second
	for range 2 {
		testkit.StartWorker(t, client(), reg, opts, r.sig)
	}
	return r
}

// running waits until n jobs have run (a handler records its job before
// its worker settles it).
func (r *rig) running(n int) {
	r.t.Helper()
	testkit.Until(r.t, &r.sig.Settled, nil, "work to be running", func() (bool, string) {
		return r.l.ran() >= n, fmt.Sprint(r.l.ran(), " jobs ran")
	})
}

// slot is the cluster slot of the queue's partition 0.
func (r *rig) slot() int { return partitionSlot(r.ns) }

func partitionSlot(ns string) int {
	return keys.Slot(keys.Partition{NS: ns, Queue: "default", Index: 0}.Tag())
}

// wakeColocated returns a namespace whose partition 0 has the same master
// as the queue's wake-up channel, so that a failover of that master also
// moves the workers' subscription.
func wakeColocated(t *testing.T, c *redisproc.Cluster) string {
	t.Helper()
	ctx := context.Background()
	for range 100 {
		ns := redistest.NewNamespace(t)
		a, err := c.MasterOf(ctx, partitionSlot(ns))
		testkit.Must(t, err)
		b, err := c.MasterOf(ctx, keys.Slot(keys.WakeChannel(ns, "default")))
		testkit.Must(t, err)
		if a == b {
			return ns
		}
	}
	t.Fatal("no namespace puts partition 0 and the wake channel on one master")
	return ""
}

// enqueue adds jobs from..to-1 in batches of 8, each with its own ID so
// that retrying a batch after an error (a redirection go-redis gave up
// on, a failover in progress) is idempotent.
func (r *rig) enqueue(ctx context.Context, from, to int) {
	for lo := from; lo < to; lo += 8 {
		var items []flow.Item
		for i := lo; i < min(lo+8, to); i++ {
			items = append(items, flow.Item{Args: task{N: i}, Opts: []flow.EnqueueOption{flow.WithID(fmt.Sprintf("job-%d", i))}})
		}
		for {
			res, err := r.client.EnqueueMany(ctx, items...)
			if err == nil {
				r.mu.Lock()
				for _, e := range res {
					r.ids = append(r.ids, e.ID)
				}
				r.mu.Unlock()
				break
			}
			if ctx.Err() != nil {
				r.t.Errorf("enqueueing jobs %d..: %v", lo, err)
				return
			}
			time.Sleep(20 * time.Millisecond) // the cluster is changing; try again
		}
	}
}

// produce enqueues jobs from..to-1 in the background; the returned
// function waits for it.
func (r *rig) produce(from, to int) (wait func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.enqueue(ctx, from, to)
	}()
	return func() {
		<-done
		cancel()
	}
}

// finish waits until every enqueued job completed, then proves the
// wake-ups still reach the workers: one more job per partition must
// complete, with the IdlePoll safety net longer than the wait.
func (r *rig) finish(total int) {
	r.t.Helper()
	r.mu.Lock()
	ids := append([]string(nil), r.ids...)
	r.mu.Unlock()
	if len(ids) != total {
		r.t.Fatalf("%d jobs enqueued, want %d", len(ids), total)
	}
	waitCompleted(r.t, r.client, r.sig, ids)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.enqueue(ctx, total, total+rigPartitions)
	waitCompleted(r.t, r.client, r.sig, r.ids[total:])
	reruns := 0
	r.l.mu.Lock()
	for _, n := range r.l.runs {
		reruns += n - 1
	}
	r.l.mu.Unlock()
	r.t.Logf("%d jobs completed, %d re-runs; node clients saw MOVED %d, ASK %d, TRYAGAIN %d",
		len(r.ids), reruns, r.redir.moved.Load(), r.redir.ask.Load(), r.redir.tryAgain.Load())
}

// claimLoaded reports whether s has the claim script's function library.
func claimLoaded(t *testing.T, s *redisproc.Server) bool {
	t.Helper()
	cl := s.Client()
	defer cl.Close()
	libs, err := cl.FunctionList(context.Background(), redis.FunctionListQuery{LibraryNamePattern: "s" + lua.Claim.Function()}).Result()
	testkit.Must(t, err)
	return len(libs) == 1
}

// TestFailover runs a partitioned queue on 3 masters with a replica each
// while the master of one partition's slot (a) hands over to its replica
// (CLUSTER FAILOVER), (b) migrates the slot to another master, (c) is
// SIGKILLed. Every enqueued job completes (re-runs are allowed: delivery
// is at least once), and afterwards wake-ups still start new jobs on every
// partition. The scenarios share one cluster, in order.
func TestFailover(t *testing.T) {
	t.Parallel()
	c, err := redisproc.StartCluster(3, redisproc.WithReplicas(1), redisproc.WithArgs("--cluster-node-timeout", "1000"))
	testkit.Must(t, err)
	t.Cleanup(func() { c.Close() })
	const jobs = 300

	t.Run("coordinated failover", func(t *testing.T) {
		r := newRig(t, c, runtime.Options{IdlePoll: 10 * time.Minute}, nil)
		ctx := context.Background()
		_, replica, err := replicaOf(ctx, c, r.slot())
		testkit.Must(t, err)
		wait := r.produce(0, jobs)
		r.running(jobs / 6)
		// Function libraries replicate like data: the replica has the
		// claim script before its promotion, so nothing is reloaded after.
		// Replication is asynchronous: it may take a moment to arrive
		// (under a loaded machine, more than the jobs took to start).
		redistest.Eventually(t, "the claim script's library to reach the replica", func() bool { return claimLoaded(t, replica) })
		promoted, err := c.Failover(ctx, r.slot())
		testkit.Must(t, err)
		wait()
		r.finish(jobs)
		if !claimLoaded(t, promoted) {
			t.Fatal("the promoted replica has no claim script")
		}
	})

	t.Run("slot migration", func(t *testing.T) {
		r := newRig(t, c, runtime.Options{IdlePoll: 10 * time.Minute}, nil)
		ctx := context.Background()
		src, err := c.MasterOf(ctx, r.slot())
		testkit.Must(t, err)
		to := otherMaster(ctx, t, c, src)
		wait := r.produce(0, jobs)
		r.running(jobs / 6)
		testkit.Must(t, c.MigrateSlot(ctx, r.slot(), to, 16, 10*time.Millisecond))
		wait()
		r.finish(jobs)
		if r.redir.moved.Load() == 0 || r.redir.ask.Load()+r.redir.tryAgain.Load() == 0 {
			t.Fatalf("the migration was not seen: MOVED %d, ASK %d, TRYAGAIN %d", r.redir.moved.Load(), r.redir.ask.Load(), r.redir.tryAgain.Load())
		}
	})

	t.Run("master killed", func(t *testing.T) {
		// The jobs of partition 0 hold their slots until the kill, so
		// leases, renewals and acks are in flight across it. A wake-up
		// missed because the idle flag was written just before the kill and
		// not replicated is bounded by IdlePoll.
		gate := make(chan struct{})
		r := newRig(t, c, runtime.Options{IdlePoll: 2 * time.Second}, gate)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.enqueue(ctx, 0, jobs)
		// Leased, they run and wait at the gate.
		claimed := 0
		r.sig.Claimed.WaitFor(t, func(c testsignal.Claimed) bool {
			if partitionOf(c.JobID) == "0" {
				claimed++
			}
			return claimed == 8
		})
		// Replication is asynchronous: what a master acknowledged but had
		// not sent to its replica dies with it. The jobs and their claims
		// are replicated first; writes after that may still be lost, which
		// only makes a job run again.
		testkit.Must(t, c.AwaitReplicated(ctx))
		_, promoted, err := c.KillMaster(ctx, r.slot())
		close(gate)
		testkit.Must(t, err)
		// The workers' wake-up subscriptions were on the killed master:
		// go-redis re-establishes them on the channel slot's new master.
		channel := keys.WakeChannel(r.ns, "default")
		node := promoted.Client()
		defer node.Close()
		// Polled: go-redis resubscribes on its own time, and says so to no one.
		redistest.Eventually(t, "both workers to resubscribe on "+promoted.Addr(), func() bool {
			n, err := node.PubSubNumSub(ctx, channel).Result()
			return err == nil && n[channel] == 2
		})
		r.enqueue(ctx, jobs, jobs+jobs/3)
		if t.Failed() {
			t.FailNow()
		}
		r.finish(jobs + jobs/3)
	})

	// A worker subscribes to wake-ups on every node; one that does not
	// answer (a replica just killed, still listed by the cluster) must not
	// keep the worker from starting.
	t.Run("replica down at start", func(t *testing.T) {
		ctx := context.Background()
		var replica *redisproc.Server
		for _, s := range c.Nodes() {
			info := s.Client()
			role, err := info.Do(ctx, "ROLE").Slice()
			info.Close()
			if err == nil && len(role) > 0 && role[0] == "slave" {
				replica = s
				break
			}
		}
		if replica == nil {
			t.Fatal("no replica left")
		}
		testkit.Must(t, replica.Kill())
		r := newRig(t, c, runtime.Options{}, nil)
		r.enqueue(ctx, 0, jobs/3)
		r.finish(jobs / 3)
	})
}

// replicaOf returns the master of slot and its replica.
func replicaOf(ctx context.Context, c *redisproc.Cluster, slot int) (master, replica *redisproc.Server, err error) {
	if master, err = c.MasterOf(ctx, slot); err != nil {
		return nil, nil, err
	}
	reps, err := c.ReplicasOf(ctx, master)
	if err != nil || len(reps) == 0 {
		return nil, nil, fmt.Errorf("replicas of %s: %v, %w", master.Addr(), reps, err)
	}
	return master, reps[0], nil
}

// otherMaster returns a master of c other than not.
func otherMaster(ctx context.Context, t *testing.T, c *redisproc.Cluster, not *redisproc.Server) *redisproc.Server {
	t.Helper()
	for _, s := range c.Nodes() {
		info := s.Client()
		role, err := info.Do(ctx, "ROLE").Slice()
		info.Close()
		if err == nil && len(role) > 0 && role[0] == "master" && s != not {
			return s
		}
	}
	t.Fatal("no other master")
	return nil
}
