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

// TestStalledSchedulerAfterGrow: a scheduler claims a tick and stalls
// before enqueueing it; the queue grows from 2 to 4; another scheduler
// takes the abandoned tick and enqueues it by the new count; the stalled
// one wakes and enqueues it, which adds nothing: the tick has one job. A
// helper's audit found the stalled one placed it by the count its client
// read at start (2), on another partition, where it was added again.
func TestStalledSchedulerAfterGrow(t *testing.T) {
	e := newSchedEnv(t)
	ctx := context.Background()
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
	r, err := two.Enqueue(ctx, report{})
	testkit.Must(t, err)
	testkit.Must(t, admin.New(two).DeleteJob(ctx, r.ID))

	sc := flow.Schedule{Name: "m", Cron: "* * * * *", Args: report{}}
	stop := e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	stalled := e.newScheduler(sc)
	testkit.Must(t, flow.EnqueueTicks(stalled, "m", at(0))) // its client reads the layout of 2

	e.clk.Advance(tick.Sub(e.clk.Now()))
	st := store.New(e.rdb, store.Config{NS: e.ns, Now: e.clk.Now})
	res, err := st.ClaimTicks(ctx, "m", at(0), tick, []time.Time{tick})
	if err != nil || res != store.Claimed {
		t.Fatalf("claim: %q, %v", res, err)
	}
	// stalls here; the operator grows the queue
	adm := admin.New(e.client())
	testkit.Must(t, adm.PauseQueue(ctx, "default"))
	testkit.Must(t, adm.ResizeQueue(ctx, "default", 4))
	testkit.Must(t, adm.ResumeQueue(ctx, "default"))
	e.clk.Advance(40 * time.Second)
	stop = e.run(e.newScheduler(sc))
	e.wait("m", 1)
	stop()
	// the stalled scheduler wakes
	testkit.Must(t, flow.EnqueueTicks(stalled, "m", tick))
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
