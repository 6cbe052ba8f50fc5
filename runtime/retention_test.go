package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// TestRetentionClearsBacklog: one maintenance pass deletes a backlog of
// expired jobs far larger than one sweep call's batch, so that Redis
// memory comes back after a burst instead of draining a hundred jobs a
// second. On a test clock, the worker runs the jobs; an hour later (their
// retention is a minute) its next maintenance pass, the only one in that
// hour, must delete them all.
func TestRetentionClearsBacklog(t *testing.T) {
	t.Parallel()
	const jobs = 1500
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	ctx := context.Background()
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[workArgs]) error { return nil }))
	items := make([]flow.Item, jobs)
	for i := range items {
		items[i] = flow.Item{Args: workArgs{N: i}}
	}
	if _, err := e.Client.EnqueueMany(ctx, items...); err != nil {
		t.Fatal(err)
	}
	opts := runtime.Options{Concurrency: 50, RetainCompleted: time.Minute, MaintenanceInterval: time.Hour, Clock: clk}
	w := e.startWorker(reg, opts)
	count := func(state string) int64 {
		n, err := e.RDB.HGet(ctx, e.partition().Stats(), state).Int64()
		if err != nil && err.Error() != "redis: nil" {
			t.Fatal(err)
		}
		return n
	}
	completed := 0
	e.Sig.Settled.WaitFor(t, func(s testsignal.Settled) bool {
		if s.State == flow.StateCompleted {
			completed++
		}
		return completed == jobs
	})
	if n := count(flow.StateCompleted); n != jobs {
		t.Fatalf("%d jobs completed, want %d", n, jobs)
	}
	// The first pass ran at the start; the next is armed an hour later.
	pass := func(n int) {
		e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == n })
	}
	pass(1)
	clk.Advance(time.Hour)
	pass(2)
	if n := count(flow.StateCompleted); n != 0 {
		t.Errorf("%d completed jobs left after the next maintenance pass", n)
	}
	left, err := e.RDB.Keys(ctx, e.partition().Job("*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d job hashes left after the next maintenance pass", len(left))
	}
}

// TestWorkerRunsWhenRetentionCannotBeRecorded: a worker that cannot write
// its retention record (here the key holds a string: HSET answers
// WRONGTYPE; an ACL user without the key is refused the same way) logs a
// warning naming its queues and runs its jobs: the record only tells
// operators' tools, which then fall back to the default and say so.
func TestWorkerRunsWhenRetentionCannotBeRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	testkit.Must(t, e.RDB.Set(context.Background(), keys.Retention(e.NS), "not a hash", 0).Err())
	id := e.Enqueue(workArgs{})
	w := e.startWorker(quickHandler(t), runtime.Options{})
	e.WaitState(id, flow.StateCompleted)
	if w.logs.find(func(l logRec) bool {
		return l.Level == slog.LevelWarn && strings.Contains(l.Msg, "recording the worker's retention")
	}) == nil {
		w.logs.dump(t)
		t.Error("no warning says the worker's retention was not recorded")
	}
}

// TestWorkerRecordsRetentionAfterAFailedWrite: a worker whose write of its
// retention at Run fails (the connection lost: testkit.FailCommand) writes
// it again from its maintenance loop, one script call a pass, the first pass (just
// after Run's try) excepted, until one succeeds, and then no more. Until
// then an older worker's record, of another configuration, stays; after,
// the record is this worker's, with the time it started.
func TestWorkerRecordsRetentionAfterAFailedWrite(t *testing.T) {
	t.Parallel()
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	ctx := context.Background()
	key := keys.Retention(e.NS)
	testkit.Must(t, e.RDB.HSet(ctx, key, "default", "60000:60000:60000:1:old-worker").Err())
	h := &testkit.FailScript{Script: lua.Retention, Key: key, Fail: 2}
	e.RDB.AddHook(h)
	const cancelled = 7 * 24 * time.Hour
	w := e.startWorker(quickHandler(t), runtime.Options{MaintenanceInterval: time.Hour, RetainCancelled: cancelled, Clock: clk})
	check := func(n int, calls int64, worker string) {
		t.Helper()
		e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == w.ID() && p.N == n })
		if got := h.Calls(); got != calls {
			t.Errorf("after pass %d: %d writes of the record, want %d", n, got, calls)
		}
		v, err := e.RDB.HGet(ctx, key, "default").Result()
		testkit.Must(t, err)
		r, err := store.DecodeRetention("default", v)
		testkit.Must(t, err)
		if r.Worker != worker {
			t.Fatalf("after pass %d: the record is %s's, want %s's", n, r.Worker, worker)
		}
		if worker == w.ID() && (r.Cancelled != cancelled || !r.Started.Equal(start)) {
			t.Errorf("after pass %d: recorded %+v, want RetainCancelled %s, started %s", n, r, cancelled, start)
		}
	}
	check(1, 1, "old-worker") // Run's write failed; the first pass does not try again
	clk.Advance(time.Hour)
	check(2, 2, "old-worker") // the retry failed too
	clk.Advance(time.Hour)
	check(3, 3, w.ID()) // the next one is written
	clk.Advance(time.Hour)
	check(4, 3, w.ID()) // and not again
	if warned := w.logs.count(func(l logRec) bool {
		return l.Level == slog.LevelWarn && strings.Contains(l.Msg, "recording the worker's retention")
	}); warned != 1 {
		t.Errorf("%d warnings that the retention was not recorded, want 1 (Run's)", warned)
	}
	if w.logs.find(func(l logRec) bool {
		return l.Level == slog.LevelInfo && strings.Contains(l.Msg, "recorded the worker's retention")
	}) == nil {
		t.Error("no log says the retention was recorded in the end")
	}
}

// TestLateRetentionRetryKeepsNewerWorkersRecord: worker A starts, keeping
// cancelled jobs an hour, and its write of the record fails; a minute
// later worker B starts with a new configuration (a deploy: 7 days) and
// records it; at A's next maintenance pass its retry succeeds. The record
// must stay B's, the worker that started last: the retry wrote A's over
// it, and operators' cancels went by the configuration the deploy
// replaced. A writes no more after that pass.
func TestLateRetentionRetryKeepsNewerWorkersRecord(t *testing.T) {
	t.Parallel()
	start := fakeStart()
	clk := newTestClock(start)
	e := newEnv(t, clk)
	ctx := context.Background()
	key := keys.Retention(e.NS)
	h := &testkit.FailScript{Script: lua.Retention, Key: key, Fail: 1}
	e.RDB.AddHook(h)
	pass := func(id string, n int) {
		t.Helper()
		e.Sig.Maintained.WaitFor(t, func(p testsignal.Pass) bool { return p.Worker == id && p.N == n })
	}
	record := func() store.Retention {
		t.Helper()
		v, err := e.RDB.HGet(ctx, key, "default").Result()
		testkit.Must(t, err)
		r, err := store.DecodeRetention("default", v)
		testkit.Must(t, err)
		return r
	}
	a := e.startWorker(quickHandler(t), runtime.Options{WorkerID: "A", MaintenanceInterval: time.Hour,
		RetainCancelled: time.Hour, Clock: clk})
	pass("A", 1)
	if n := h.Calls(); n != 1 {
		t.Fatalf("%d writes after A's Run, want 1 (failed)", n)
	}
	clk.Advance(time.Minute)
	const deployed = 7 * 24 * time.Hour
	e.startWorker(quickHandler(t), runtime.Options{WorkerID: "B", MaintenanceInterval: time.Hour,
		RetainCancelled: deployed, Clock: clk})
	pass("B", 1)
	if r := record(); r.Worker != "B" || r.Cancelled != deployed || !r.Started.Equal(start.Add(time.Minute)) {
		t.Fatalf("after B's Run: %+v, want B's, started %s", r, start.Add(time.Minute))
	}
	clk.Advance(time.Hour)
	pass("A", 2)
	if n := h.Calls(); n != 3 {
		t.Errorf("%d writes after A's retry, want 3 (A's, B's, A's retry)", n)
	}
	if r := record(); r.Worker != "B" || r.Cancelled != deployed {
		t.Errorf("after A's late retry: the record is %+v; want B's, RetainCancelled %s", r, deployed)
	}
	if a.logs.find(func(l logRec) bool {
		return l.Level == slog.LevelInfo && strings.Contains(l.Msg, "a worker that started later")
	}) == nil {
		a.logs.dump(t)
		t.Error("A's log does not say its record was left to a worker that started later")
	}
	clk.Advance(time.Hour)
	pass("A", 3)
	if n := h.Calls(); n != 3 {
		t.Errorf("%d writes after A's third pass, want 3: A is not owed a write any more", n)
	}
}
