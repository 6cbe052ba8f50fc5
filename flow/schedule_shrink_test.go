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
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTickOnceAcrossShrinkAfterCrash: a scheduler claims a tick
// and enqueues its job on partition 2 or 3 of a queue of 4, then dies
// before its ack. The job runs and its finished job is deleted; the
// operator shrinks the queue to 2 (partitions 2 and 3 are empty, as the
// shrink requires) and the schedulers restart. The abandoned tick is
// handed to a new scheduler, which finds the tick's marker on its
// retired partition and enqueues nothing. A helper's audit found it
// looked only on the partitions of the new layout (0, 1), and enqueued
// the tick a second time: it ran twice.
func TestTickOnceAcrossShrinkAfterCrash(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	ctx := context.Background()
	k := 0
	for i := 1; i < 100; i++ {
		h := fnv.New32a()
		h.Write([]byte(tickIDs("m", time.Duration(i)*time.Minute)[0]))
		if h.Sum32()%4 >= 2 {
			k = i
			break
		}
	}
	tick := at(time.Duration(k) * time.Minute)
	four, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk, Partitions: map[string]int{"default": 4}})
	testkit.Must(t, err)
	r, err := four.Enqueue(ctx, report{}) // registers the queue with 4 partitions
	testkit.Must(t, err)
	testkit.Must(t, admin.New(four).DeleteJob(ctx, r.ID))

	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()

	claimTick(t, e, tick)
	dying := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(dying, "m", tick)) // enqueues, then acks...
	ks := keys.Schedules{NS: e.ns}
	testkit.Must(t, e.rdb.HSet(ctx, ks.Pending("m"), tick.UnixMilli(), tick.UnixMilli()).Err()) // ...died before the ack

	// the tick's job ran; its finished job is deleted
	local := tickIDs("m", time.Duration(k)*time.Minute)[0]
	var ran []string
	for i := range 4 {
		p := keys.Partition{NS: e.ns, Queue: "default", Index: i}
		if n, _ := e.rdb.Exists(ctx, p.Job(local)).Result(); n == 1 {
			ran = append(ran, keys.Ref{Partition: p, Local: local}.String())
		}
	}
	if len(ran) != 1 {
		t.Fatalf("the tick's job: %v, want one", ran)
	}
	adm := admin.New(e.client())
	testkit.Must(t, adm.DeleteJob(ctx, ran[0]))
	testkit.Must(t, adm.PauseQueue(ctx, "default"))
	testkit.Must(t, adm.ResizeQueue(ctx, "default", 2))
	testkit.Must(t, adm.ResumeQueue(ctx, "default"))

	e.clk.Advance(tick.Add(40 * time.Second).Sub(e.clk.Now())) // the claim is abandoned
	e.run(e.newScheduler(sc))
	e.wait("m", 1)
	var again []string
	for i := range 4 {
		p := keys.Partition{NS: e.ns, Queue: "default", Index: i}
		if n, _ := e.rdb.Exists(ctx, p.Job(local)).Result(); n == 1 {
			again = append(again, fmt.Sprintf("default:%d", i))
		}
	}
	if len(again) != 0 {
		t.Errorf("tick %v, whose job (%s) ran before the shrink, was enqueued again: in %v", tick, ran[0], again)
	}
}
