package flow_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTickOnceAcrossGrowAfterCrash: a scheduler claims a tick and
// enqueues its job on a queue of 2 partitions, then dies before its ack.
// The operator grows the queue to 4 (pause, resize, resume) and the
// schedulers restart. The abandoned tick is handed to a new scheduler,
// whose count now places the tick's ID on another partition: it finds the
// job where the first put it and confirms the tick, adding nothing.
// Before, the tick's job existed twice and ran twice (found by an audit).
func TestTickOnceAcrossGrowAfterCrash(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	k, tick := growingTick(t, e)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1) // published, last = t0
	stop()

	// the scheduler that is about to die: claims the tick, enqueues its job
	claimTick(t, e, tick)
	dying := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(dying, "m", tick)) // enqueues, then acks...
	// ...but it died before the ack: the tick is still pending, claimed at tick
	ks := keys.Schedules{NS: e.ns}
	testkit.Must(t, e.rdb.HSet(ctx, ks.Pending("m"), tick.UnixMilli(), tick.UnixMilli()).Err())

	growQueue(t, e)                                            // the fleet restarts
	e.clk.Advance(tick.Add(40 * time.Second).Sub(e.clk.Now())) // the claim is abandoned
	e.run(e.newScheduler(sc))
	e.wait("m", 1)
	checkOneTickJob(t, e, k, tick)
}

// TestStalledSchedulerAfterGrow: a scheduler claims a tick and stalls
// before enqueueing it; the queue grows from 2 to 4; another scheduler
// takes the abandoned tick and enqueues it by the new count; the stalled
// one wakes and enqueues it, which adds nothing: the tick has one job. A
// helper's audit found the stalled one placed it by the count its client
// read at start (2), on another partition, where it was added again.
func TestStalledSchedulerAfterGrow(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	k, tick := growingTick(t, e)
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	stalled := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(stalled, "m", at(0))) // its client reads the layout of 2

	claimTick(t, e, tick) // and it stalls here
	growQueue(t, e)
	e.clk.Advance(40 * time.Second)
	stop = e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	testkit.Must(t, flow.EnqueueTicks(stalled, "m", tick)) // the stalled scheduler wakes
	checkOneTickJob(t, e, k, tick)
}

// growingTick registers queue default with 2 partitions and returns the
// first minute k whose tick of schedule m has an ID placed on different
// partitions under 2 and 4, and that tick.
func growingTick(t *testing.T, e *schedEnv) (int, time.Time) {
	t.Helper()
	k := 0
	for i := 1; i < 100; i++ {
		h := fnv.New32a()
		h.Write([]byte(tickIDs("m", time.Duration(i)*time.Minute)[0]))
		if h.Sum32()%2 != h.Sum32()%4 {
			k = i
			break
		}
	}
	two, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk, Partitions: map[string]int{"default": 2}})
	testkit.Must(t, err)
	r, err := two.Enqueue(context.Background(), report{}) // registers the queue with 2 partitions
	testkit.Must(t, err)
	testkit.Must(t, admin.New(two).DeleteJob(context.Background(), r.ID))
	return k, at(time.Duration(k) * time.Minute)
}

// claimTick moves the clock to tick and claims it for schedule m, as a
// scheduler does before it enqueues the tick's job.
func claimTick(t *testing.T, e *schedEnv, tick time.Time) {
	t.Helper()
	e.clk.Advance(tick.Sub(e.clk.Now()))
	st := store.New(e.rdb, store.Config{NS: e.ns, Now: e.clk.Now})
	res, err := st.ClaimTicks(context.Background(), "m", at(0), tick, []time.Time{tick})
	if err != nil || res != store.Claimed {
		t.Fatalf("claim: %q, %v", res, err)
	}
}

// growQueue grows queue default to 4 partitions as an operator does:
// pause, resize, resume.
func growQueue(t *testing.T, e *schedEnv) {
	t.Helper()
	ctx := context.Background()
	adm := admin.New(e.client())
	testkit.Must(t, adm.PauseQueue(ctx, "default"))
	testkit.Must(t, adm.ResizeQueue(ctx, "default", 4))
	testkit.Must(t, adm.ResumeQueue(ctx, "default"))
}

// checkOneTickJob checks that minute k's tick of schedule m has one job,
// on one partition of queue default's 4.
func checkOneTickJob(t *testing.T, e *schedEnv, k int, tick time.Time) {
	t.Helper()
	var found []string
	for i := range 4 {
		p := keys.Partition{NS: e.ns, Queue: "default", Index: i}
		n, err := e.rdb.Exists(context.Background(), p.Job(tickIDs("m", time.Duration(k)*time.Minute)[0])).Result()
		testkit.Must(t, err)
		if n == 1 {
			found = append(found, fmt.Sprintf("default:%d", i))
		}
	}
	if len(found) != 1 {
		t.Fatalf("tick %v has %d jobs, want 1: in %v", tick, len(found), found)
	}
}

// TestConfiguredSchedulerAfterGrow: the scheduler of a process configured
// with a queue's partition count (ClientOptions.Partitions) goes on
// enqueueing ticks after an operator grows the queue, as the process's
// client goes on enqueueing (docs/operations.md, "Resizing a queue"). A
// helper's review found that the scheduler's read of the layout before
// its ticks (4528a85) checked the configured count, failed, and left the
// ticks pending: the schedule stopped firing from that process.
func TestConfiguredSchedulerAfterGrow(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	_, _ = growingTick(t, e) // registers queue default with 2 partitions
	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()

	two, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk,
		Partitions: map[string]int{"default": 2}})
	testkit.Must(t, err)
	s, err := flow.NewScheduler(two, flow.SchedulerOptions{Logger: testkit.Quiet})
	testkit.Must(t, err)
	testkit.Must(t, s.Add(sc))
	testkit.Must(t, flow.EnqueueTicks(s, "m", at(0))) // the process runs, its client knows the layout of 2

	growQueue(t, e)
	e.clk.Advance(time.Minute)
	if _, err := two.Enqueue(context.Background(), report{}); err != nil {
		t.Fatalf("the same client's Enqueue after the growth: %v", err)
	}
	if err := flow.EnqueueTicks(s, "m", at(time.Minute)); err != nil {
		t.Errorf("its scheduler's tick after the growth: %v (the tick stays pending)", err)
	}
}
