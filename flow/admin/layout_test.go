package admin_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestQueueNotFound: every call that names a queue answers
// ErrQueueNotFound, naming it, for a queue no client or worker has used,
// and writes nothing.
func TestQueueNotFound(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)
	a.enqueue(email{To: "x"}) // the namespace has a queue: default
	ctx := context.Background()
	calls := map[string]func() error{
		"PauseQueue":  func() error { return a.ops.PauseQueue(ctx, "nosuch") },
		"ResumeQueue": func() error { return a.ops.ResumeQueue(ctx, "nosuch") },
		"QueueStats": func() error {
			_, err := a.ops.QueueStats(ctx, "nosuch", 0)
			return err
		},
		"DeadEffects": func() error {
			_, err := a.ops.DeadEffects(ctx, "nosuch", 0)
			return err
		},
		"ListJobs": func() error {
			_, err := a.ops.ListJobs(ctx, admin.ListOptions{Queue: "nosuch", State: flow.StateArchived})
			return err
		},
		"RedriveSelected": func() error {
			_, err := a.ops.RedriveSelected(ctx, admin.Selector{Queue: "nosuch"}, admin.RedriveOptions{})
			return err
		},
		"ResizeQueue": func() error { return a.ops.ResizeQueue(ctx, "nosuch", 2) },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, admin.ErrQueueNotFound) || !errors.Is(err, sluicetype.ErrQueueNotFound) {
			t.Errorf("%s: %v, want ErrQueueNotFound", name, err)
			continue
		}
		if !strings.Contains(err.Error(), `"nosuch"`) {
			t.Errorf("%s: %q does not name the queue", name, err)
		}
	}
	if ks := rdb.Keys(ctx, "{"+a.ns+":nosuch:*").Val(); len(ks) != 0 {
		t.Errorf("the calls wrote %v", ks)
	}
	if qs, err := a.ops.Queues(ctx); err != nil || len(qs) != 1 || qs[0].Name != "default" {
		t.Errorf("Queues = %+v, %v: want only default", qs, err)
	}
}

// TestQueuesAndNamespaces: Queues lists every registered queue, sorted,
// with its layout, registration time (store time) and paused partitions;
// Namespaces lists the namespace once a queue of it is registered.
func TestQueuesAndNamespaces(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"b": 3})
	ctx := context.Background()
	if nss, err := admin.Namespaces(ctx, rdb); err != nil || slices.Contains(nss, a.ns) {
		t.Fatalf("before any queue: Namespaces = %v, %v", nss, err)
	}
	registered := a.clk.Now()
	a.enqueue(email{To: "x"}, flow.WithQueue("b"))
	a.clk.Advance(60_000_000_000) // a minute
	a.enqueue(email{To: "x"}, flow.WithQueue("a"))
	ok(t, a.ops.PauseQueue(ctx, "b"))
	qs, err := a.ops.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []admin.QueueInfo{
		{Name: "a", Partitions: 1, Version: 1, Registered: a.clk.Now(), Changed: a.clk.Now()},
		{Name: "b", Partitions: 3, Version: 1, Registered: registered, Changed: registered, Paused: 3},
	}
	if d := cmp.Diff(want, qs, cmp.Comparer(func(x, y interface{ UnixMilli() int64 }) bool { return x.UnixMilli() == y.UnixMilli() })); d != "" {
		t.Errorf("Queues (-want +got):\n%s", d)
	}
	lays, err := a.ops.Layouts(ctx) // the same, without the paused flags
	if err != nil {
		t.Fatal(err)
	}
	want[1].Paused = 0
	if d := cmp.Diff(want, lays, cmp.Comparer(func(x, y interface{ UnixMilli() int64 }) bool { return x.UnixMilli() == y.UnixMilli() })); d != "" {
		t.Errorf("Layouts (-want +got):\n%s", d)
	}
	nss, err := admin.Namespaces(ctx, rdb)
	if err != nil || !slices.Contains(nss, a.ns) || !slices.IsSorted(nss) {
		t.Errorf("Namespaces = %v, %v: want it sorted, with %s", nss, err, a.ns)
	}
	if _, err := admin.Namespaces(ctx, nil); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("Namespaces(nil): %v, want ErrInvalid", err)
	}
}

// TestResizeQueue: a resize is refused while the queue is not paused, and
// a shrink while a partition that would go away holds a job, each with
// ErrResizeRefused saying why and nothing changed; once safe it changes
// the layout and bumps its version; resizing to the same count does
// nothing; growing pauses the new partitions; clients started after it
// place jobs by the new count.
func TestResizeQueue(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"rq": 4})
	ctx := context.Background()
	// one job, on partition 3 (the others deleted at once)
	last := ""
	for i := 0; last == ""; i++ {
		id := a.enqueue(email{To: "x"}, flow.WithQueue("rq"), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		if strings.HasPrefix(id, "rq:3:") {
			last = id
		} else {
			ok(t, a.ops.DeleteJob(ctx, id))
		}
	}
	layout := func() admin.QueueInfo {
		t.Helper()
		qs, err := a.ops.Queues(ctx)
		if err != nil || len(qs) != 1 {
			t.Fatalf("Queues = %+v, %v", qs, err)
		}
		return qs[0]
	}
	refused := func(what string, err error, says string) {
		t.Helper()
		if !errors.Is(err, admin.ErrResizeRefused) || !strings.Contains(err.Error(), says) {
			t.Fatalf("%s: %v, want ErrResizeRefused saying %q", what, err, says)
		}
		if l := layout(); l.Partitions != 4 || l.Version != 1 {
			t.Fatalf("%s changed the layout: %+v", what, l)
		}
	}
	refused("resize of a running queue", a.ops.ResizeQueue(ctx, "rq", 2), "partitions 0, 1, 2, 3 are not paused")
	ok(t, a.ops.PauseQueue(ctx, "rq"))
	refused("shrink over a job", a.ops.ResizeQueue(ctx, "rq", 2), "partition 3, which would go away, holds available 1")
	for _, bad := range []int{0, 1025} {
		if err := a.ops.ResizeQueue(ctx, "rq", bad); !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("resize to %d: %v, want ErrInvalid", bad, err)
		}
	}

	ok(t, a.ops.DeleteJob(ctx, last))
	ok(t, a.ops.ResizeQueue(ctx, "rq", 2))
	if l := layout(); l.Partitions != 2 || l.Version != 2 || l.Paused != 2 {
		t.Fatalf("after the shrink: %+v, want 2 partitions (paused), version 2", l)
	}
	ok(t, a.ops.ResizeQueue(ctx, "rq", 2)) // again: nothing to do
	if l := layout(); l.Version != 2 {
		t.Fatalf("a resize to the same count changed the version: %+v", l)
	}
	ok(t, a.ops.ResizeQueue(ctx, "rq", 3))
	if l := layout(); l.Partitions != 3 || l.Version != 3 || l.Paused != 3 {
		t.Fatalf("after the growth: %+v, want 3 partitions, all paused, version 3", l)
	}
	if n := rdb.Exists(ctx, keys.Partition{NS: a.ns, Queue: "rq", Index: 2}.Paused()).Val(); n != 1 {
		t.Errorf("the new partition 2 is not paused")
	}

	later, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for i := range 32 {
		r, err := later.Enqueue(ctx, email{To: "y"}, flow.WithQueue("rq"), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		used[strings.Split(r.ID, ":")[1]] = true
	}
	if !cmp.Equal(used, map[string]bool{"0": true, "1": true, "2": true}) {
		t.Errorf("a client started after the resize used partitions %v, want 0, 1 and 2", used)
	}
	// the old count is now a mismatch for a process configured with it
	stale, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns, Partitions: map[string]int{"rq": 4}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Enqueue(ctx, email{To: "z"}, flow.WithQueue("rq")); !errors.Is(err, admin.ErrLayoutMismatch) {
		t.Errorf("a client configured with the old count: %v, want ErrLayoutMismatch", err)
	}
}

// ok fails the test on err.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestShrinkRefusesStaleProducer: a client that read a queue's layout
// before a shrink, and keeps placing jobs by the old count, adds nothing
// to a partition that went away: its enqueue fails with a
// LayoutMismatchError (Resized, naming both counts) and no job is left
// where no worker looks; the client has read the new count, so the same
// call made again adds the job to a partition that exists. A shrink
// refused for a job left in a partition brings that partition back, and
// enqueues to it work again.
func TestShrinkRefusesStaleProducer(t *testing.T) {
	t.Parallel()
	a, stale := staleProducer(t)
	ctx := context.Background()
	// a partition key the 4-partition layout places on partition 3
	key := ""
	for i := 0; key == ""; i++ {
		r, err := stale.Enqueue(ctx, email{To: "x"}, flow.WithQueue("sq"), flow.WithPartitionKey("k"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.ID, "sq:3:") {
			key = "k" + strconv.Itoa(i)
		}
		ok(t, a.ops.DeleteJob(ctx, r.ID))
	}
	ok(t, a.ops.PauseQueue(ctx, "sq"))

	// refused while partition 3 holds a job: partition 3 comes back
	held, err := stale.Enqueue(ctx, email{To: "held"}, flow.WithQueue("sq"), flow.WithPartitionKey(key))
	ok(t, err)
	if err := a.ops.ResizeQueue(ctx, "sq", 2); !errors.Is(err, admin.ErrResizeRefused) {
		t.Fatalf("shrink over a job: %v, want ErrResizeRefused", err)
	}
	again, err := stale.Enqueue(ctx, email{To: "again"}, flow.WithQueue("sq"), flow.WithPartitionKey(key))
	if err != nil || !strings.HasPrefix(again.ID, "sq:3:") {
		t.Fatalf("enqueue to partition 3 after a refused shrink: %+v, %v", again, err)
	}
	ok(t, a.ops.DeleteJob(ctx, held.ID))
	ok(t, a.ops.DeleteJob(ctx, again.ID))

	ok(t, a.ops.ResizeQueue(ctx, "sq", 2))
	_, err = stale.Enqueue(ctx, email{To: "late"}, flow.WithQueue("sq"), flow.WithPartitionKey(key))
	var me *sluicetype.LayoutMismatchError
	if !errors.Is(err, admin.ErrLayoutMismatch) || !errors.As(err, &me) {
		t.Fatalf("enqueue by the old count after the shrink: %v, want a LayoutMismatchError", err)
	}
	want := sluicetype.LayoutMismatchError{Namespace: a.ns, Queue: "sq", Configured: 4, Recorded: 2, Resized: true}
	if *me != want {
		t.Errorf("the error is %+v, want %+v", *me, want)
	}
	if msg := err.Error(); strings.Contains(msg, "job 0") || !strings.Contains(msg, "enqueue again") {
		t.Errorf("the message %q should say to enqueue again, without a job index", msg)
	}
	gone := keys.Partition{NS: a.ns, Queue: "sq", Index: 3}
	if c, err := a.st.StateCounts(ctx, []keys.Partition{gone}); err != nil || sum(c[0]) != 0 {
		t.Errorf("the retired partition counts %v (%v), want no job", c, err)
	}
	r, err := stale.Enqueue(ctx, email{To: "late"}, flow.WithQueue("sq"), flow.WithPartitionKey(key))
	if err != nil || !(strings.HasPrefix(r.ID, "sq:0:") || strings.HasPrefix(r.ID, "sq:1:")) {
		t.Fatalf("the same enqueue made again: %+v, %v; want it on partition 0 or 1", r, err)
	}
}

// staleProducer registers queue "sq" with 4 partitions, empty, and
// returns a client that learns that count from Redis.
func staleProducer(t *testing.T) (*fixture, *flow.Client) {
	t.Helper()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"sq": 4})
	ok(t, a.ops.DeleteJob(a.ctx, a.enqueue(email{To: "first"}, flow.WithQueue("sq")))) // registers 4 partitions
	stale, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: a.ns})
	ok(t, err)
	return a, stale
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestShrinkRefusesStaleEnqueueMany: an EnqueueMany by the count before a
// shrink that took two partitions away reports each of their jobs with
// the same *LayoutMismatchError (4 partitions used, 2 recorded), however
// the two refusals race to re-read the layout; the jobs placed on the
// partitions that stay are added.
func TestShrinkRefusesStaleEnqueueMany(t *testing.T) {
	t.Parallel()
	a, stale := staleProducer(t)
	ctx := context.Background()
	r, err := stale.Enqueue(ctx, email{To: "reads the layout"}, flow.WithQueue("sq"))
	ok(t, err)
	ok(t, a.ops.DeleteJob(ctx, r.ID))
	ok(t, a.ops.PauseQueue(ctx, "sq"))
	ok(t, a.ops.ResizeQueue(ctx, "sq", 2))

	items := make([]flow.Item, 40)
	for i := range items {
		items[i] = flow.Item{Args: email{To: strconv.Itoa(i)}, Opts: []flow.EnqueueOption{flow.WithQueue("sq"), flow.WithPartitionKey("k" + strconv.Itoa(i))}}
	}
	res, err := stale.EnqueueMany(ctx, items...)
	want := sluicetype.LayoutMismatchError{Namespace: a.ns, Queue: "sq", Configured: 4, Recorded: 2, Resized: true}
	if !errors.Is(err, admin.ErrLayoutMismatch) || strings.Count(err.Error(), "resized") != 1 || len(res) != len(items) {
		t.Fatalf("EnqueueMany by the old count: %d results, %v; want all listed and one cause", len(res), err)
	}
	refused := map[string]bool{}
	for i, r := range res {
		p := strings.Split(r.ID, ":")[1]
		var me *sluicetype.LayoutMismatchError
		switch {
		case p == "0" || p == "1":
			if r.Err != nil {
				t.Errorf("job %d on partition %s, which stays: %v", i, p, r.Err)
			}
		case !errors.As(r.Err, &me) || *me != want:
			t.Errorf("job %d on retired partition %s: %v, want %+v", i, p, r.Err, want)
		default:
			refused[p] = true
		}
	}
	if !refused["2"] || !refused["3"] {
		t.Fatalf("refused jobs on partitions %v: want jobs on both 2 and 3 (other keys?)", refused)
	}
}
