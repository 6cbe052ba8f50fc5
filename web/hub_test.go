package web

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

// countingOps counts the live reads the hub makes.
type countingOps struct {
	ops
	live, briefs atomic.Int64
}

func (c *countingOps) QueuesLive(ctx context.Context, q map[string]int) ([]admin.QueueLive, error) {
	c.live.Add(1)
	return c.ops.QueuesLive(ctx, q)
}

func (c *countingOps) JobBriefs(ctx context.Context, ids []string) (map[string]admin.JobBrief, error) {
	c.briefs.Add(1)
	return c.ops.JobBriefs(ctx, ids)
}

// TestHubSharesOneRead: twenty subscribers (five following the same job)
// cost one counters read and one job read per tick between them, each
// receives the overview, the followers receive the job's changes, and the
// poller stops when the last one leaves.
func TestHubSharesOneRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(flaky{})
	ops := &countingOps{ops: adminOps{Client: f.ops}}
	h := newHub(ops, 100*time.Millisecond, func(err error) { t.Error(err) })
	var subs []*subscriber
	for i := range 20 {
		job := ""
		if i < 5 {
			job = id
		}
		subs = append(subs, h.subscribe(job))
	}
	if on, _ := h.running(); !on {
		t.Fatal("no poller runs with subscribers")
	}
	const ticks = 5
	var wg sync.WaitGroup
	var jobSeen atomic.Int64
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := 0
			deadline := time.After(testkit.Timeout)
			for got < ticks {
				select {
				case ev := <-s.ch:
					switch ev.name {
					case "overview":
						got++
					case "job":
						if i >= 5 {
							t.Errorf("subscriber %d follows no job but got %s", i, ev.data)
						}
						jobSeen.Add(1)
					}
				case <-deadline:
					t.Errorf("subscriber %d: %d overview events in %s", i, got, testkit.Timeout)
					return
				}
			}
		}()
	}
	wg.Wait()
	_, done := h.running()
	for _, s := range subs {
		h.unsubscribe(s)
	}
	select {
	case <-done:
	case <-time.After(testkit.Timeout):
		t.Fatal("the poller did not stop when the last subscriber left")
	}
	if on, _ := h.running(); on {
		t.Fatal("a poller is said to run with no subscriber")
	}
	// Each subscriber saw at least ticks overview events, so the poller
	// published at least ticks times (reusing a snapshot younger than the
	// interval, when ticks bunch up); twenty subscribers must not have
	// multiplied the reads. A subscriber that fell behind has events
	// dropped, so the poller may have published a few more times than one
	// saw.
	most := int64(ticks + cap(subs[0].ch) + 2)
	if live, briefs := ops.live.Load(), ops.briefs.Load(); live < 1 || live > most || briefs > most {
		t.Errorf("%d counters reads and %d job reads for about %d ticks and 20 subscribers", live, briefs, ticks)
	}
	if n := jobSeen.Load(); n < 5 {
		t.Errorf("the five followers saw %d job events, want one each at least", n)
	}
	snap, err := h.current(context.Background())
	testkit.Must(t, err)
	if len(snap.Queues) != 1 || snap.Queues[0].Depth[flow.StateAvailable] != 1 || len(snap.Queues[0].Series) != historyMinutes {
		t.Errorf("snapshot: %+v", snap.Queues)
	}
}
