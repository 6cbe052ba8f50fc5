package flow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEnqueueErrorTexts: Enqueue's error for bad input says what is wrong
// without EnqueueMany's "job N:" (there is one job), EnqueueMany's names
// the bad job's index, and a conflicting ID names the existing job, as a
// *sluicetype.ConflictError that is ErrConflict, from both.
func TestEnqueueErrorTexts(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t, realRedis(t), nil)
	ctx := context.Background()

	_, err := c.Enqueue(ctx, email{To: "a"}, flow.WithQueue("bad queue"))
	if !errors.Is(err, flow.ErrInvalid) || strings.Contains(err.Error(), "job 0") ||
		!strings.HasPrefix(err.Error(), "sluice: invalid input") {
		t.Fatalf("Enqueue with a bad queue: %v, want ErrInvalid without a job index", err)
	}
	_, err = c.EnqueueMany(ctx, flow.Item{Args: email{To: "a"}},
		flow.Item{Args: email{To: "b"}, Opts: []flow.EnqueueOption{flow.WithQueue("bad queue")}})
	if !errors.Is(err, flow.ErrInvalid) || !strings.HasPrefix(err.Error(), "job 1: sluice: invalid input") {
		t.Fatalf("EnqueueMany with a bad second job: %v, want it named job 1", err)
	}

	first, err := c.Enqueue(ctx, email{To: "a"}, flow.WithID("order-7"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Enqueue(ctx, email{To: "other"}, flow.WithID("order-7"))
	var ce *sluicetype.ConflictError
	if !errors.Is(err, flow.ErrConflict) || !errors.As(err, &ce) || ce.ID != first.ID {
		t.Fatalf("conflicting ID: %v (%#v), want a ConflictError naming %s", err, ce, first.ID)
	}
	if want := "sluice: job " + first.ID + " exists with a different kind or payload"; err.Error() != want {
		t.Fatalf("conflict error %q, want %q", err, want)
	}
	res, err := c.EnqueueMany(ctx, flow.Item{Args: email{To: "b"}},
		flow.Item{Args: email{To: "other"}, Opts: []flow.EnqueueOption{flow.WithID("order-7")}})
	if err != nil || res[0].Err != nil || !errors.As(res[1].Err, &ce) || ce.ID != first.ID {
		t.Fatalf("EnqueueMany with a conflicting ID: %+v, %v; want the second's Err naming %s", res, err, first.ID)
	}
}

// TestEnqueueManyOnePartitionFails: when EnqueueMany's call to one
// partition fails, only the jobs of that call and of the partition's calls
// after it carry the error; the other jobs were added and are reported
// with their IDs, and the error returned says how many failed and wraps
// the cause. With the reply lost after Redis ran the call, the failed jobs
// are there anyway (the documented caveat). A partition gets its jobs in
// calls of at most 1,000: with 2,600 jobs over two partitions, partition
// 1's second call failing leaves its first call's 1,000 jobs added.
func TestEnqueueManyOnePartitionFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		jobs, pass int // pass: partition 1's calls that succeed first
		lost       bool
	}{
		{"call fails", 300, 0, false},
		{"reply lost", 300, 0, true},
		{"second call of the partition fails", 2600, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 2}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Enqueue(ctx, email{To: "registers the layout"}); err != nil {
				t.Fatal(err)
			}
			rdb.AddHook(&testkit.FailCalls{Script: lua.Enqueue, Part: keys.Partition{NS: ns, Queue: "default", Index: 1},
				Pass: tc.pass, LostReply: tc.lost})

			items := make([]flow.Item, tc.jobs) // in blocks: both partitions
			for i := range items {
				items[i] = flow.Item{Args: email{To: fmt.Sprint(i)}}
			}
			res, err := c.EnqueueMany(ctx, items...)
			if len(res) != len(items) {
				t.Fatalf("EnqueueMany: %d results, %v; want all %d listed", len(res), err, len(items))
			}
			failed, onBad := 0, 0
			for i, r := range res {
				n, rerr := env.Client(t).Exists(ctx, jobKey(t, ns, r.ID)).Result()
				if rerr != nil {
					t.Fatal(rerr)
				}
				added := partitionOf(t, r.ID) == "0"
				if !added {
					added = onBad < 1000*tc.pass // in a call before the failing one
					onBad++
				}
				switch {
				case added && (r.Err != nil || n != 1):
					t.Fatalf("job %d, sent in a call that succeeded: %+v, in Redis %v; want added", i, r, n == 1)
				case !added && (!errors.Is(r.Err, testkit.ErrInjected) || (n == 1) != tc.lost):
					t.Fatalf("job %d, in a call that failed: %+v, in Redis %v", i, r, n == 1)
				case !added:
					failed++
				}
			}
			if failed == 0 || failed == len(items) {
				t.Fatalf("%d of %d jobs failed: want some", failed, len(items))
			}
			want := fmt.Sprintf("sluice: enqueue failed for %d of %d jobs (each has its Err): %v", failed, len(items), testkit.ErrInjected)
			if !errors.Is(err, testkit.ErrInjected) || err.Error() != want {
				t.Fatalf("EnqueueMany's error: %v, want %q", err, want)
			}
		})
	}
}

// jobKey is the Redis key of a job's hash, from its ID.
func jobKey(t *testing.T, ns, id string) string {
	t.Helper()
	ref, ok := keys.ParseRef(ns, id)
	if !ok {
		t.Fatalf("job ID %q does not parse", id)
	}
	return ref.Partition.Job(ref.Local)
}

// TestEnqueueFailedCallKeepsID: an Enqueue whose call fails past
// go-redis's retries returns the ID the job was sent under with the
// error: with the reply lost after Redis ran the call, Job finds the job
// under it; with the call lost before, it finds none. Before, the result
// was empty, and a caller could not tell whether it had added a job.
func TestEnqueueFailedCallKeepsID(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprint("reply lost ", lost), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
			testkit.Must(t, err)
			rdb.AddHook(&testkit.FailCalls{Script: lua.Enqueue, Part: keys.Partition{NS: ns, Queue: "default"}, Pass: 1, LostReply: lost})
			if _, err := c.Enqueue(ctx, email{To: "passes"}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Enqueue(ctx, email{To: "fails"})
			if !errors.Is(err, testkit.ErrInjected) || res.ID == "" {
				t.Fatalf("Enqueue: %+v, %v; want its ID with the injected error", res, err)
			}
			_, err = c.Job(ctx, res.ID)
			if lost && err != nil {
				t.Fatalf("Job(%s) after the lost reply: %v, want the job", res.ID, err)
			}
			if !lost && !errors.Is(err, flow.ErrNotFound) {
				t.Fatalf("Job(%s) after the failed call: %v, want ErrNotFound", res.ID, err)
			}
		})
	}
}

// TestEnqueueManySentAgain: the jobs of a partition whose call failed,
// sent again with SentAs(their ID), are found when the failed call had
// added them (its reply lost: Duplicate, nothing added twice) and added
// when it had not; either way the queue then holds each job once. Sent
// again without it (as new jobs), the lost reply's jobs were added twice.
func TestEnqueueManySentAgain(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprint("reply lost ", lost), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := redistest.NewNamespace(t)
			rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 2}})
			testkit.Must(t, err)
			testkit.Must(t, func() error { _, err := c.Enqueue(ctx, email{To: "registers the layout"}); return err }())
			rdb.AddHook(&testkit.FailCalls{Script: lua.Enqueue, Part: keys.Partition{NS: ns, Queue: "default", Index: 1}, LostReply: lost})
			items := make([]flow.Item, 300) // in blocks: both partitions
			for i := range items {
				items[i] = flow.Item{Args: email{To: fmt.Sprint(i)}}
			}
			res, err := c.EnqueueMany(ctx, items...)
			if !errors.Is(err, testkit.ErrInjected) {
				t.Fatalf("EnqueueMany: %v, want the injected error", err)
			}
			var again []flow.Item
			var ids []string
			for i, r := range res {
				if r.Err != nil {
					again = append(again, flow.Item{Args: items[i].Args, Opts: []flow.EnqueueOption{flow.SentAs(r.ID)}})
					ids = append(ids, r.ID)
				}
			}
			plain := redis.NewClient(&redis.Options{Addr: env.Server.Addr()}) // no fault
			t.Cleanup(func() { _ = plain.Close() })
			c2, err := flow.NewClient(plain, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 2}})
			testkit.Must(t, err)
			res2, err := c2.EnqueueMany(ctx, again...)
			testkit.Must(t, err)
			for k, r := range res2 {
				if r.Duplicate != lost || r.ID != ids[k] || r.Err != nil {
					t.Fatalf("sent again as %s: %+v, want that ID, Duplicate %v", ids[k], r, lost)
				}
			}
			stats, err := admin.New(c2).QueueStats(ctx, "default", time.Minute)
			testkit.Must(t, err)
			if n := stats.Depth[flow.StateAvailable]; n != 301 {
				t.Errorf("%d jobs available, want 301 (each once)", n)
			}
			if _, err := c2.Enqueue(ctx, email{}, flow.SentAs("default:2:x")); !errors.Is(err, flow.ErrInvalid) {
				t.Errorf("SentAs of a partition the queue has not: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestSentAsOfPartitionGrownSinceCached: a client that read its queue's
// layout at 2 partitions, then sends a job again with SentAs naming
// partition 3 after the queue grew to 4 (the ID another process, or this
// one after a restart of its cache, was given), reads the layout from
// Redis before refusing the partition: the job is added there. It was
// refused ErrInvalid by the count the client had cached.
func TestSentAsOfPartitionGrownSinceCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := redistest.NewNamespace(t)
	rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	reg, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"default": 2}})
	testkit.Must(t, err)
	if _, err := reg.Enqueue(ctx, email{}); err != nil { // registers the queue at 2 partitions
		t.Fatal(err)
	}
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns}) // no count of its own: it reads Redis's
	testkit.Must(t, err)
	if _, err := c.Enqueue(ctx, email{}); err != nil { // caches 2 partitions
		t.Fatal(err)
	}
	other, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns}) // an operator's, in another process
	testkit.Must(t, err)
	adm := admin.New(other)
	testkit.Must(t, adm.PauseQueue(ctx, "default"))
	testkit.Must(t, adm.ResizeQueue(ctx, "default", 4))
	testkit.Must(t, adm.ResumeQueue(ctx, "default"))

	res, err := c.Enqueue(ctx, email{}, flow.SentAs("default:3:again"))
	if err != nil || res.ID != "default:3:again" || res.Duplicate {
		t.Fatalf("SentAs of partition 3 of a queue grown to 4: %+v, %v; want it added there", res, err)
	}
	if _, err := c.Enqueue(ctx, email{}, flow.SentAs("default:4:x")); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("SentAs of partition 4 of a queue of 4: %v, want ErrInvalid", err)
	}
}
