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
	// a tick whose ID lands on different partitions under 2 and 4
	k := 0
	for i := 1; i < 100; i++ {
		h := fnv.New32a()
		h.Write([]byte(tickIDs("m", time.Duration(i)*time.Minute)[0]))
		if h.Sum32()%2 != h.Sum32()%4 {
			k = i
			break
		}
	}
	tick := at(time.Duration(k) * time.Minute)
	two, err := flow.NewClient(e.rdb, flow.ClientOptions{Namespace: e.ns, Registry: e.reg, Clock: e.clk, Partitions: map[string]int{"default": 2}})
	testkit.Must(t, err)
	r, err := two.Enqueue(ctx, report{}) // registers the queue with 2 partitions
	testkit.Must(t, err)
	testkit.Must(t, admin.New(two).DeleteJob(ctx, r.ID))

	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1) // published, last = t0
	stop()

	// the scheduler that is about to die: claims the tick, enqueues its job
	e.clk.Advance(tick.Sub(e.clk.Now()))
	st := store.New(e.rdb, store.Config{NS: e.ns, Now: e.clk.Now})
	res, err := st.ClaimTicks(ctx, "m", at(0), tick, []time.Time{tick})
	if err != nil || res != store.Claimed {
		t.Fatalf("claim: %q, %v", res, err)
	}
	dying := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(dying, "m", tick)) // enqueues, then acks...
	// ...but it died before the ack: the tick is still pending, claimed at tick
	ks := keys.Schedules{NS: e.ns}
	testkit.Must(t, e.rdb.HSet(ctx, ks.Pending("m"), tick.UnixMilli(), tick.UnixMilli()).Err())

	// the operator grows the queue; the fleet restarts
	adm := admin.New(e.client())
	testkit.Must(t, adm.PauseQueue(ctx, "default"))
	testkit.Must(t, adm.ResizeQueue(ctx, "default", 4))
	testkit.Must(t, adm.ResumeQueue(ctx, "default"))

	e.clk.Advance(tick.Add(40 * time.Second).Sub(e.clk.Now())) // the claim is abandoned
	e.run(e.newScheduler(sc))
	e.wait("m", 1)

	var found []string
	for i := range 4 {
		p := keys.Partition{NS: e.ns, Queue: "default", Index: i}
		n, err := e.rdb.Exists(ctx, p.Job(tickIDs("m", time.Duration(k)*time.Minute)[0])).Result()
		testkit.Must(t, err)
		if n == 1 {
			found = append(found, fmt.Sprintf("default:%d", i))
		}
	}
	if len(found) != 1 {
		t.Fatalf("tick %v has %d jobs, want 1: in %v", tick, len(found), found)
	}
}
