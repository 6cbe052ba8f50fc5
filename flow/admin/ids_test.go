package admin_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRedriveByID: redrive, release, delete and cancel by ID, with typed
// errors for every refusal; an ID given twice is one job, moved once (it
// was reported moved and failed: "it is available").
func TestRedriveByID(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	dead := a.enqueue(email{To: "dead"}, flow.WithMaxAttempts(1))
	a.finish("default", 1, 0, failAck)
	quar := a.enqueue(email{To: "quar"})
	for range 3 {
		a.finish("default", 1, 0, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "p"})
	}
	avail := a.enqueue(email{To: "avail"})
	rep, err := a.ops.Redrive(a.ctx, dead, quar, avail, "default:0:nope", "bad", dead)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{dead}, rep.Moved); d != "" {
		t.Fatalf("moved (-want +got):\n%s", d)
	}
	var se *sluicetype.StateError
	if !errors.As(rep.Failed[quar], &se) || se.ID != quar || se.State != flow.StateQuarantined || !errors.Is(rep.Failed[avail], admin.ErrWrongState) ||
		!errors.Is(rep.Failed["default:0:nope"], flow.ErrNotFound) || !errors.Is(rep.Failed["bad"], flow.ErrInvalid) || len(rep.Failed) != 4 {
		t.Fatalf("failed: %v", rep.Failed)
	}
	j, err := a.ops.Job(a.ctx, dead)
	if err != nil || j.State != flow.StateAvailable || j.Redrives != 1 || j.Attempt != 1 || j.RedrivenFrom != "archived:attempts_exhausted" || len(j.Errors) != 1 {
		t.Fatalf("redriven job: %+v, %v", j, err)
	}
	rep, err = a.ops.Release(a.ctx, quar)
	if err != nil || len(rep.Moved) != 1 {
		t.Fatalf("release: %+v, %v", rep, err)
	}
	if j, _ := a.ops.Job(a.ctx, quar); j.CrashAttempt != 0 || j.State != flow.StateAvailable || len(j.Errors) != 3 {
		t.Fatalf("released job: %+v", j)
	}
	var many []string
	for i := range admin.MaxRedriveIDs + 1 {
		many = append(many, fmt.Sprintf("default:0:x%d", i))
	}
	if _, err := a.ops.Redrive(a.ctx, many...); !errors.Is(err, admin.ErrTooMany) {
		t.Fatalf("too many: %v", err)
	}
	// the limit counts jobs, not how often an ID was given: one ID listed
	// more times than the limit is one job, and is answered as one
	again := slices.Repeat([]string{"default:0:x"}, admin.MaxRedriveIDs+1)
	if rep, err := a.ops.Redrive(a.ctx, again...); err != nil || len(rep.Failed) != 1 || !errors.Is(rep.Failed["default:0:x"], flow.ErrNotFound) {
		t.Fatalf("one ID given %d times: %+v, %v", len(again), rep, err)
	}
	for name, call := range map[string]func() error{
		"redrive": func() error { _, err := a.ops.Redrive(a.ctx); return err },
		"release": func() error { _, err := a.ops.Release(a.ctx); return err },
		"effects": func() error { return a.ops.RedriveEffects(a.ctx) },
	} {
		if err := call(); !errors.Is(err, flow.ErrInvalid) { // no IDs is a mistake, not "ok"
			t.Fatalf("%s of no IDs: %v", name, err)
		}
	}
	noErr(t, a.cancel(avail))
	noErr(t, a.ops.DeleteJob(a.ctx, avail))
	if _, err := a.ops.Job(a.ctx, avail); !errors.Is(err, flow.ErrNotFound) {
		t.Fatalf("deleted job: %v", err)
	}
	for _, err := range []error{a.cancel(avail), a.ops.DeleteJob(a.ctx, avail)} {
		if !errors.Is(err, flow.ErrNotFound) {
			t.Fatalf("on a deleted job: %v", err)
		}
	}
	if _, err := a.ops.CancelJob(a.ctx, "nope"); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("bad ID: %v", err)
	}
}

// TestQueueStats: depth per state, jobs finished per minute and run time
// percentiles over the window.
func TestQueueStats(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), map[string]int{"st": 2})
	for range 10 {
		a.enqueue(email{}, flow.WithQueue("st"))
	}
	a.finish("st", 2, 100*time.Millisecond, store.Ack{Code: store.CodeOK})
	a.enqueue(email{}, flow.WithQueue("st"), flow.WithMaxAttempts(1))
	a.finish("st", 2, time.Second, failAck)
	a.enqueue(email{}, flow.WithQueue("st"), flow.WithDelay(time.Hour))
	noErr(t, a.ops.PauseQueue(a.ctx, "st"))
	st, err := a.ops.QueueStats(a.ctx, "st", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"scheduled": 1, "available": 0, "running": 0, "retryable": 0, "completed": 10, "archived": 1, "quarantined": 0, "cancelled": 0}
	if d := cmp.Diff(want, st.Depth); d != "" {
		t.Fatalf("depth (-want +got):\n%s", d)
	}
	if st.Partitions != 2 || st.Paused != 2 || st.Window != 10*time.Minute || st.Finished["completed"] != 10 || st.Finished["archived"] != 1 || st.CompletedPerMinute != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// 100ms falls in the bucket [2^(26/4)-1, 2^(27/4)-1) = [89.5ms, 106.6ms)
	if rt := st.RunTime; rt.Count != 10 || rt.P50 < 100*time.Millisecond || rt.P50 > 107*time.Millisecond || rt.P99 != rt.P50 {
		t.Fatalf("run times: %+v", rt)
	}
	if _, err := a.ops.QueueStats(a.ctx, "st", 3*time.Hour); !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("long window: %v", err)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedriveOnePartitionFails: when the redrive call to one partition
// fails (the connection cut past go-redis's retries), only that
// partition's jobs are reported failed, with the call's error, which is
// also returned; the other partition's job is still redriven and reported
// moved. Dead-effect redrive, which sends partitions in order, goes on
// past a failed first partition the same way.
func TestRedriveOnePartitionFails(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	a := newAdmin(t, rdb, map[string]int{"default": 2})
	var ids [2]string // an archived job on each partition
	for i := 0; ids[0] == "" || ids[1] == ""; i++ {
		id := a.enqueue(email{To: fmt.Sprint(i)}, flow.WithMaxAttempts(1), flow.WithPartitionKey(fmt.Sprint("k", i)))
		if p := strings.Split(id, ":")[1]; p == "0" && ids[0] == "" {
			ids[0] = id
		} else if p == "1" && ids[1] == "" {
			ids[1] = id
		}
	}
	a.finish("default", 2, 0, failAck)
	rdb.AddHook(&testkit.FailCalls{Script: lua.Redrive, Part: keys.Partition{NS: a.ns, Queue: "default", Index: 1}})
	rdb.AddHook(&testkit.FailCalls{Script: lua.DeadEffects, Part: keys.Partition{NS: a.ns, Queue: "default", Index: 0}})

	rep, err := a.ops.Redrive(a.ctx, ids[1], ids[0]) // the failing partition first
	if !errors.Is(err, testkit.ErrInjected) || !slices.Equal(rep.Moved, []string{ids[0]}) || len(rep.Failed) != 1 ||
		!errors.Is(rep.Failed[ids[1]], testkit.ErrInjected) {
		t.Fatalf("redrive over a failing partition: %+v, %v; want %s moved, %s failed with the injected error", rep, err, ids[0], ids[1])
	}
	for i, want := range []string{flow.StateAvailable, flow.StateArchived} {
		if j, err := a.ops.Job(a.ctx, ids[i]); err != nil || j.State != want {
			t.Errorf("job %s: %+v, %v; want %s", ids[i], j, err, want)
		}
	}

	err = a.ops.RedriveEffects(a.ctx, "default:0:1-1", "default:1:1-1")
	if !errors.Is(err, testkit.ErrInjected) || !errors.Is(err, admin.ErrNoDeadEffect) {
		t.Fatalf("dead-effect redrive past a failing partition: %v; want the injected error for one and ErrNoDeadEffect for the other", err)
	}
}

// TestRedriveEffectsLimitCountsEffects: RedriveEffects' limit counts dead
// effects, as Redrive's counts jobs: one ID given more times than
// MaxRedriveIDs is one effect, answered once, not ErrTooMany.
func TestRedriveEffectsLimitCountsEffects(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "x"}) // registers the queue
	again := slices.Repeat([]string{"default:0:nope"}, admin.MaxRedriveIDs+1)
	if err := a.ops.RedriveEffects(a.ctx, again...); errors.Is(err, admin.ErrTooMany) || !errors.Is(err, admin.ErrNoDeadEffect) ||
		strings.Count(err.Error(), "default:0:nope") != 1 {
		t.Fatalf("one dead effect ID given %d times: %v; want one not-found error", len(again), err)
	}
}
