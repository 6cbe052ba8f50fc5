package clustertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// claimCounter is a go-redis hook that counts claim script calls (EVALSHA
// of lua.Claim; a NOSCRIPT fallback to EVAL is the same claim) per
// partition, by the partition's sched key, the script's first key.
type claimCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *claimCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *claimCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *claimCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) > 3 && lua.Claim.Is(fmt.Sprint(args[0]), fmt.Sprint(args[1])) {
			c.mu.Lock()
			c.n[fmt.Sprint(args[3])]++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// counts returns the claims per partition index.
func (c *claimCounter) counts(parts []keys.Partition) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = c.n[p.Sched()]
	}
	return out
}

func partitions(ns string, n int) []keys.Partition {
	out := make([]keys.Partition, n)
	for i := range out {
		out[i] = keys.Partition{NS: ns, Queue: "default", Index: i}
	}
	return out
}

// TestDryPartitionsNotPolled: a worker serving 12 partitions spread over
// a 3-node cluster, of which only two get work, claims from each dry
// partition once (the first sweep; the IdlePoll safety net is set longer
// than the test) while the busy ones are claimed from round after round,
// woken by the push wake-ups that name their partition.
func TestDryPartitionsNotPolled(t *testing.T) {
	t.Parallel()
	const nParts, rounds, perRound = 12, 15, 3
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"default": nParts}
	l := newLedger()
	reg := registry(t, l, nil)
	producer := clusterClient(t, env.Cluster)
	c, err := flow.NewClient(producer, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	testkit.Must(t, err)
	wrdb := clusterClient(t, env.Cluster)
	counter := &claimCounter{n: map[string]int{}}
	wrdb.AddHook(counter)
	pk := partitions(ns, nParts)
	w := testkit.StartWorker(t, wrdb, reg, runtime.Options{Namespace: ns, Partitions: parts, Concurrency: 4, IdlePoll: 10 * time.Minute}, nil)
	w.Sig.Idle.Wait(t) // idle once the first sweep found every partition dry
	for i, n := range counter.counts(pk) {
		if n == 0 {
			t.Fatalf("idle before the first claim on partition %d: %v", i, counter.counts(pk))
		}
	}

	// Two partition keys on different partitions.
	ctx := context.Background()
	hot := map[string]string{} // partition -> key
	var ids []string
	for i := 0; len(hot) < 2; i++ {
		key := fmt.Sprintf("hot-%d", i)
		res, err := c.Enqueue(ctx, task{N: i}, flow.WithPartitionKey(key))
		testkit.Must(t, err)
		ids = append(ids, res.ID)
		if _, dup := hot[partitionOf(res.ID)]; !dup {
			hot[partitionOf(res.ID)] = key
		}
	}
	waitCompleted(t, c, w.Sig, ids)
	for r := range rounds {
		ids = ids[:0]
		for _, key := range hot {
			for n := range perRound {
				res, err := c.Enqueue(ctx, task{N: r*perRound + n}, flow.WithPartitionKey(key))
				testkit.Must(t, err)
				ids = append(ids, res.ID)
			}
		}
		waitCompleted(t, c, w.Sig, ids) // the partitions run dry between rounds
	}

	got := counter.counts(pk)
	for i, n := range got {
		if _, busy := hot[fmt.Sprint(i)]; busy {
			if n < rounds {
				t.Errorf("busy partition %d claimed from %d times in %d rounds: %v", i, n, rounds, got)
			}
			continue
		}
		// One sweep; one more is allowed for a pub/sub reconnection, after
		// which the worker cannot know what it missed.
		if n > 2 {
			t.Errorf("dry partition %d claimed from %d times, want 1: %v", i, n, got)
		}
	}
	t.Logf("claims per partition: %v (busy: %v)", got, hot)
}

// TestBusyPartitionsServedFairly: with every one of 12 partitions holding
// work, a worker claiming two jobs at a time serves them evenly: each
// partition gets its share of the first 120 jobs started, within two
// claims.
func TestBusyPartitionsServedFairly(t *testing.T) {
	t.Parallel()
	const nParts, perPart, window = 12, 128, 120
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"default": nParts}
	l := newLedger()
	reg := registry(t, l, nil)
	rdb := clusterClient(t, env.Cluster)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	testkit.Must(t, err)
	items := make([]flow.Item, nParts*perPart)
	for i := range items {
		items[i] = flow.Item{Args: task{N: i}} // a block of 128 per partition
	}
	res, err := c.EnqueueMany(context.Background(), items...)
	testkit.Must(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Partitions: parts, Concurrency: 2, ClaimBatch: 2}, nil)
	waitCompleted(t, c, w.Sig, ids)

	l.mu.Lock()
	defer l.mu.Unlock()
	share := map[string]int{}
	for _, p := range l.starts[:window] {
		share[p]++
	}
	for i := range nParts {
		if n := share[fmt.Sprint(i)]; n < window/nParts-4 || n > window/nParts+4 {
			t.Errorf("partition %d started %d of the first %d jobs, want %d±4: %v", i, n, window, window/nParts, share)
		}
	}
}
