package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/runtime"
)

// An operator's machine may run its clock minutes off from Redis's, while
// everything the tools read was written in store time (Redis TIME): the
// per-minute counters (lua/lib_batch.lua flush_tput), a schedule's last
// tick. These tests run the tools with no injected clock against
// miniredis with its TIME set 10 minutes behind the host's (a client
// given a Clock uses it as the store's time too, which no skew survives).

// hostAhead is how far the host's clock is ahead of Redis's.
const hostAhead = 10 * time.Minute

// skewedAdmin is a fixture on a miniredis whose TIME is fixed hostAhead
// behind the host's clock, with neither the client nor the store given a
// clock; its clk moves nothing but run times in finish.
func skewedAdmin(t *testing.T) (*fixture, time.Time) {
	t.Helper()
	m := miniredis.RunT(t)
	storeNow := time.Now().Add(-hostAhead).Truncate(time.Millisecond)
	m.SetTime(storeNow)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(rdb, store.Config{NS: ns, RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3})
	return &fixture{t: t, ctx: context.Background(), c: c, ops: admin.New(c), st: st, clk: runtime.NewFakeClock(storeNow), ns: ns}, storeNow
}

// TestQueueStatsWindowInStoreTime: 20 jobs complete in the current minute
// of store time; QueueStats over the last 5 minutes counts them. (It
// placed its window by the host's clock, 10 minutes ahead: 0 completed.)
func TestQueueStatsWindowInStoreTime(t *testing.T) {
	t.Parallel()
	a, _ := skewedAdmin(t)
	for i := range 20 {
		a.enqueue(email{To: string(rune('a' + i))})
	}
	if n := a.finish("default", 1, 0, store.Ack{Code: store.CodeOK}); n != 20 {
		t.Fatalf("finished %d", n)
	}
	st, err := a.ops.QueueStats(a.ctx, "default", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if st.Depth[flow.StateCompleted] != 20 {
		t.Fatalf("depth %v", st.Depth)
	}
	if got := st.Finished[flow.StateCompleted]; got != 20 || st.RunTime.Count != 20 {
		t.Fatalf("QueueStats over 5 minutes: %d completed, %d run times, want 20 (all finished in the current minute of store time): "+
			"the window was placed by the host's clock, %s ahead of Redis's", got, st.RunTime.Count, hostAhead)
	}
}

// TestQueueHistoryMinutesInStoreTime: QueueHistory's last minute is the
// current minute of store time, and holds the jobs finished in it. (Its
// minutes were the host's: the last one 10 minutes after the jobs, and
// none of the 5 read held them.)
func TestQueueHistoryMinutesInStoreTime(t *testing.T) {
	t.Parallel()
	a, storeNow := skewedAdmin(t)
	for range 7 {
		a.enqueue(email{To: "x"})
	}
	a.finish("default", 1, 0, store.Ack{Code: store.CodeOK})
	ms, err := a.ops.QueueHistory(a.ctx, "default", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	last := ms[len(ms)-1]
	if want := storeNow.Truncate(time.Minute); !last.Minute.Equal(want) || last.Finished[flow.StateCompleted] != 7 {
		t.Fatalf("QueueHistory's last minute %s with %v, want %s (store time) with 7 completed", last.Minute.UTC(), last.Finished, want.UTC())
	}
}

// TestScheduleNextRunInStoreTime: a schedule every minute, started at
// store time, runs next in the minute after store time's. (NextRun was the
// minute after the host's clock, 10 minutes late.)
func TestScheduleNextRunInStoreTime(t *testing.T) {
	t.Parallel()
	a, storeNow := skewedAdmin(t)
	must(t, a.st.PublishSchedule(a.ctx, store.ScheduleDef{Name: "tick", Every: time.Minute, Queue: "default", Kind: "email"}))
	if _, err := a.st.SyncSchedule(a.ctx, "tick", time.Minute); err != nil { // starts it at store time
		t.Fatal(err)
	}
	want := storeNow.Truncate(time.Minute).Add(time.Minute)
	one, err := a.ops.Schedule(a.ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	all, err := a.ops.Schedules(a.ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("Schedules: %v, %v", all, err)
	}
	for _, got := range []time.Time{one.NextRun, all[0].NextRun} {
		if !got.Equal(want) {
			t.Fatalf("NextRun %s, want %s: the minute after store time, not after the host's clock (%s ahead)", got.UTC(), want.UTC(), hostAhead)
		}
	}
}
