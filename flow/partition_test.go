package flow_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/runtime"
)

// event is one job of an ordered stream: the Nth event of Key.
type event struct {
	Key string
	N   int
}

func (event) Kind() string { return "event" }

// partitionOf is the partition part of a job ID (queue:partition:local).
func partitionOf(t *testing.T, id string) string {
	t.Helper()
	parts := strings.SplitN(id, ":", 3)
	if len(parts) != 3 {
		t.Fatalf("job ID %q is not queue:partition:local", id)
	}
	return parts[1]
}

// TestPartitionKeyOrder: on a 3-node cluster, all jobs with one partition
// key land on one partition and run in enqueue order, while different keys
// spread over the partitions. Order holds with one worker of Concurrency 1,
// and with several concurrent workers when the key also has a concurrency
// limit of 1.
func TestPartitionKeyOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		workers  int
		conc     int
		perKeyCC bool
	}{
		{"one worker of concurrency 1", 1, 1, false},
		{"two workers with a per-key limit", 2, 8, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rdb redis.UniversalClient = env.Cluster.Client()
			t.Cleanup(func() { rdb.Close() })
			const nKeys, perKey, nParts = 12, 15, 8
			reg := flow.NewRegistry()
			var (
				mu  sync.Mutex
				ran = map[string][]int{}
			)
			err := flow.Register(reg, func(_ context.Context, j *flow.Job[event]) error {
				mu.Lock()
				ran[j.Args.Key] = append(ran[j.Args.Key], j.Args.N)
				mu.Unlock()
				time.Sleep(time.Millisecond) // let jobs of other keys overtake
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ns := redistest.NewNamespace(t)
			parts := map[string]int{"default": nParts}
			c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
			if err != nil {
				t.Fatal(err)
			}
			sig := testsignal.NewWorker() // of every worker
			for range tc.workers {
				testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns, Partitions: parts, Concurrency: tc.conc}, sig)
			}
			partOfKey := map[string]string{}
			var ids []string
			for n := range perKey {
				for k := range nKeys {
					key := fmt.Sprintf("account-%d", k)
					opts := []flow.EnqueueOption{flow.WithPartitionKey(key)}
					if tc.perKeyCC {
						opts = append(opts, flow.WithConcurrencyLimit(key, 1))
					}
					res, err := c.Enqueue(context.Background(), event{Key: key, N: n}, opts...)
					if err != nil {
						t.Fatal(err)
					}
					p := partitionOf(t, res.ID)
					if prev, ok := partOfKey[key]; ok && prev != p {
						t.Fatalf("key %s: job %d on partition %s, earlier ones on %s", key, n, p, prev)
					}
					partOfKey[key] = p
					ids = append(ids, res.ID)
				}
			}
			used := map[string]bool{}
			for _, p := range partOfKey {
				used[p] = true
			}
			if len(used) < 3 {
				t.Fatalf("%d keys used only partitions %v of %d", nKeys, used, nParts)
			}
			for _, id := range ids {
				testkit.WaitState(t, c, sig, id, flow.StateCompleted)
			}
			want := make([]int, perKey)
			for i := range want {
				want[i] = i
			}
			mu.Lock()
			defer mu.Unlock()
			for k := range nKeys {
				key := fmt.Sprintf("account-%d", k)
				if diff := cmp.Diff(want, ran[key]); diff != "" {
					t.Errorf("key %s ran out of order (-want +got):\n%s", key, diff)
				}
			}
		})
	}
}

// TestPartitionKeyRouting: the partition key decides the partition over a
// job ID and a unique key, so repeats that give the same partition key
// meet (the ID is idempotent, the unique key held); without a key, jobs go
// round-robin.
func TestPartitionKeyRouting(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 16}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	enqueue := func(args flow.Args, opts ...flow.EnqueueOption) flow.Enqueued {
		t.Helper()
		res, err := c.Enqueue(ctx, args, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	keyed := enqueue(email{To: "a"}, flow.WithPartitionKey("tenant-7"))
	home := partitionOf(t, keyed.ID)

	// A caller ID is routed by the partition key, not by the ID, and a
	// repeat with the same key is a duplicate.
	for i := range 8 {
		id := fmt.Sprintf("order-%d", i)
		first := enqueue(email{To: id}, flow.WithID(id), flow.WithPartitionKey("tenant-7"))
		again := enqueue(email{To: id}, flow.WithID(id), flow.WithPartitionKey("tenant-7"))
		if partitionOf(t, first.ID) != home || first.Duplicate || !again.Duplicate || again.ID != first.ID {
			t.Fatalf("ID %s: first %+v, again %+v, key's partition %s", id, first, again, home)
		}
	}
	// A unique key is held among jobs with the same partition key.
	for i := range 8 {
		uk := fmt.Sprintf("sync-%d", i)
		first := enqueue(email{To: uk}, flow.WithUnique(uk, 0, flow.KeepExisting), flow.WithPartitionKey("tenant-7"))
		again := enqueue(email{To: uk}, flow.WithUnique(uk, 0, flow.KeepExisting), flow.WithPartitionKey("tenant-7"))
		if partitionOf(t, first.ID) != home || !again.Duplicate || !again.Unique || again.ID != first.ID {
			t.Fatalf("unique %s: first %+v, again %+v, key's partition %s", uk, first, again, home)
		}
	}
	// Without any key, consecutive jobs rotate over the partitions.
	seen := map[string]bool{}
	for i := range 16 {
		seen[partitionOf(t, enqueue(email{To: fmt.Sprint(i)}).ID)] = true
	}
	if len(seen) != 16 {
		t.Fatalf("16 unkeyed jobs used partitions %v, want all 16", seen)
	}
}

// TestEnqueueManySpreadsInBlocks: unkeyed jobs of one EnqueueMany call go
// to consecutive partitions in blocks of at least 128, so that a batch
// of 100 costs one round trip rather than one per partition, and a
// large batch still spreads evenly over every partition; the next call
// starts one partition further.
func TestEnqueueManySpreadsInBlocks(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: redistest.NewNamespace(t), Partitions: map[string]int{"default": 6}})
	if err != nil {
		t.Fatal(err)
	}
	batch := func(n int) []string {
		t.Helper()
		items := make([]flow.Item, n)
		for i := range items {
			items[i] = flow.Item{Args: email{To: fmt.Sprint(i)}}
		}
		res, err := c.EnqueueMany(context.Background(), items...)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, n)
		for i, r := range res {
			out[i] = partitionOf(t, r.ID)
		}
		return out
	}
	one := batch(100)
	for i, p := range one {
		if p != one[0] {
			t.Fatalf("job %d of 100 on partition %s, job 0 on %s: want one block of 128", i, p, one[0])
		}
	}
	small := batch(200)
	for i, p := range small {
		want := small[0]
		if i >= 128 {
			want = small[128]
		}
		if p != want {
			t.Fatalf("job %d of 200 on partition %s, want %s (blocks of 128): %v", i, p, want, small)
		}
	}
	if small[0] == small[128] {
		t.Fatalf("200 jobs on one partition %s, want two blocks", small[0])
	}
	large := batch(6 * 200)
	count := map[string]int{}
	for _, p := range large {
		count[p]++
	}
	for p := range 6 {
		if n := count[fmt.Sprint(p)]; n != 200 {
			t.Errorf("partition %d has %d of 1,200 jobs, want 200: %v", p, n, count)
		}
	}
	again := batch(1)
	if again[0] == small[0] {
		t.Errorf("the next call started on partition %s again", again[0])
	}
	// Keyed jobs in the same call do not break the unkeyed ones' blocks.
	items := make([]flow.Item, 400)
	for i := range items {
		items[i] = flow.Item{Args: email{To: fmt.Sprint(i)}}
		if i%2 == 1 {
			items[i].Opts = []flow.EnqueueOption{flow.WithPartitionKey(fmt.Sprint("k", i))}
		}
	}
	res, err := c.EnqueueMany(context.Background(), items...)
	if err != nil {
		t.Fatal(err)
	}
	unkeyed := map[string]int{}
	for i := 0; i < len(res); i += 2 {
		unkeyed[partitionOf(t, res[i].ID)]++
	}
	if len(unkeyed) != 2 {
		t.Errorf("200 unkeyed jobs among keyed ones went to %v, want 2 partitions (blocks of 128)", unkeyed)
	}
}
