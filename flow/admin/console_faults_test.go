package admin_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestQueueHistoryHugeMinutes: a number of minutes over the window is
// ErrInvalid however large; it was converted to a Duration first, which
// wrapped (1<<53 minutes) and panicked.
func TestQueueHistoryHugeMinutes(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "x"})
	for _, m := range []int{121, 1 << 53, -1} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			_, err = a.ops.QueueHistory(a.ctx, "default", 0, m)
		}()
		if !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("QueueHistory(minutes %d): %v, want ErrInvalid", m, err)
		}
	}
}

// TestQueuesLiveReadsTheLayout: QueuesLive and QueueHistory read the
// queue's layout whatever count the caller gives: a queue that is not
// registered is ErrQueueNotFound (it read zeros), a count other than the
// registry's ErrLayoutMismatch (it read that many partitions: a quarter
// of a queue of four, silently); with no queue named, QueuesLive reads
// every registered queue.
func TestQueuesLiveReadsTheLayout(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"wide": 4})
	for i := range 8 {
		a.enqueue(email{To: "x"}, flow.WithQueue("wide"), flow.WithPartitionKey(fmt.Sprint(i)))
	}
	a.enqueue(email{To: "x"})
	for _, n := range []int{0, 1} {
		if live, err := a.ops.QueuesLive(a.ctx, map[string]int{"nosuch": n}); !errors.Is(err, admin.ErrQueueNotFound) {
			t.Errorf("QueuesLive(nosuch: %d): %+v, %v, want ErrQueueNotFound", n, live, err)
		}
		if h, err := a.ops.QueueHistory(a.ctx, "nosuch", n, 5); !errors.Is(err, admin.ErrQueueNotFound) {
			t.Errorf("QueueHistory(nosuch, %d partitions): %d minutes, %v, want ErrQueueNotFound", n, len(h), err)
		}
	}
	if live, err := a.ops.QueuesLive(a.ctx, map[string]int{"wide": 1, "default": 0}); !errors.Is(err, admin.ErrLayoutMismatch) {
		t.Errorf("QueuesLive(wide: 1) of a queue of 4 partitions: %+v, %v, want ErrLayoutMismatch", live, err)
	}
	if _, err := a.ops.QueueHistory(a.ctx, "wide", 2, 5); !errors.Is(err, admin.ErrLayoutMismatch) {
		t.Errorf("QueueHistory(wide, 2 partitions) of a queue of 4: %v, want ErrLayoutMismatch", err)
	}
	if _, err := a.ops.QueuesLive(a.ctx, map[string]int{"wide": -1}); !errors.Is(err, flow.ErrInvalid) {
		t.Errorf("QueuesLive(wide: -1): %v, want ErrInvalid", err)
	}
	live, err := a.ops.QueuesLive(a.ctx, map[string]int{"wide": 4})
	if err != nil || live[0].Partitions != 4 || live[0].Depth[flow.StateAvailable] != 8 {
		t.Errorf("QueuesLive(wide: 4): %+v, %v", live, err)
	}
	all, err := a.ops.QueuesLive(a.ctx, nil)
	if err != nil || len(all) != 2 || all[0].Queue != "default" || all[1].Queue != "wide" ||
		all[1].Depth[flow.StateAvailable] != 8 || all[0].Depth[flow.StateAvailable] != 1 {
		t.Errorf("QueuesLive(nil): %+v, %v, want default and wide", all, err)
	}
}

// TestQueuesLiveKeepsHealthyQueues: a queue whose data is corrupt (a
// counter that is not a number, a stats key of another type, a registry
// entry that is not a layout) comes back with Err set and no counts; the
// other queues are read as usual. One such key failed the whole read, and
// with it every page of the console.
func TestQueuesLiveKeepsHealthyQueues(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)
	for _, q := range []string{"good", "counter", "wrongtype"} {
		a.enqueue(email{To: "x"}, flow.WithQueue(q))
	}
	must(t, rdb.HSet(a.ctx, keys.Partition{NS: a.ns, Queue: "counter", Index: 0}.Stats(), "available", "garbage").Err())
	st := keys.Partition{NS: a.ns, Queue: "wrongtype", Index: 0}.Stats()
	must(t, rdb.Del(a.ctx, st).Err())
	must(t, rdb.Set(a.ctx, st, "x", 0).Err())
	must(t, rdb.HSet(a.ctx, keys.Queues(a.ns), "registry", "garbage").Err())

	check := func(what string, live []admin.QueueLive, bad ...string) {
		t.Helper()
		got := map[string]admin.QueueLive{}
		for _, q := range live {
			got[q.Queue] = q
		}
		if g := got["good"]; g.Err != nil || g.Depth[flow.StateAvailable] != 1 {
			t.Errorf("%s: the healthy queue: %+v", what, g)
		}
		for _, q := range bad {
			if g, ok := got[q]; !ok || g.Err == nil || g.Depth != nil {
				t.Errorf("%s: queue %s: %+v, want it with Err and no counts", what, q, g)
			}
		}
		if len(live) != 1+len(bad) {
			t.Errorf("%s: %d queues, want %d", what, len(live), 1+len(bad))
		}
	}
	all, err := a.ops.QueuesLive(a.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("every queue", all, "counter", "wrongtype", "registry")
	if !errors.Is(byName(all, "counter").Err, flow.ErrMalformed) || !errors.Is(byName(all, "registry").Err, flow.ErrMalformed) {
		t.Errorf("a malformed counter and registry entry: %v; %v, want ErrMalformed", byName(all, "counter").Err, byName(all, "registry").Err)
	}
	named, err := a.ops.QueuesLive(a.ctx, map[string]int{"good": 0, "counter": 1, "wrongtype": 0, "registry": 0})
	if err != nil {
		t.Fatal(err)
	}
	check("named", named, "counter", "wrongtype", "registry")
}

func byName(live []admin.QueueLive, q string) admin.QueueLive {
	for _, l := range live {
		if l.Queue == q {
			return l
		}
	}
	return admin.QueueLive{}
}

// TestReadableSchedules: a schedule whose record is corrupt is named in
// the error and hides none of the others.
func TestReadableSchedules(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, nil)
	for _, n := range []string{"hourly", "broken"} {
		must(t, a.st.PublishSchedule(a.ctx, store.ScheduleDef{Name: n, Every: time.Hour, Queue: "default", Kind: "email"}))
	}
	must(t, rdb.HSet(a.ctx, keys.Schedules{NS: a.ns}.Schedule("broken"), "every", "soon").Err())
	ss, err := a.ops.ReadableSchedules(a.ctx)
	if len(ss) != 1 || ss[0].Name != "hourly" || !errors.Is(err, flow.ErrMalformed) {
		t.Errorf("ReadableSchedules: %+v, %v: want hourly and ErrMalformed naming broken", ss, err)
	}
}

// TestDeadEffectCount: the count covers every partition's dead effects,
// however many DeadEffects would list.
func TestDeadEffectCount(t *testing.T) {
	t.Parallel()
	rdb := env.Client(t)
	a := newAdmin(t, rdb, map[string]int{"fx": 2})
	a.enqueue(email{To: "x"}, flow.WithQueue("fx"))
	for i := range 5 {
		p := keys.Partition{NS: a.ns, Queue: "fx", Index: i % 2}
		must(t, rdb.XAdd(a.ctx, &redis.XAddArgs{Stream: p.DeadOutbox(), Values: []any{"id", fmt.Sprint("e", i)}}).Err())
	}
	if n, err := a.ops.DeadEffectCount(a.ctx, "fx"); n != 5 || err != nil {
		t.Errorf("DeadEffectCount: %d, %v, want 5", n, err)
	}
	if _, err := a.ops.DeadEffectCount(a.ctx, "nosuch"); !errors.Is(err, admin.ErrQueueNotFound) {
		t.Errorf("DeadEffectCount(nosuch): %v, want ErrQueueNotFound", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
