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
	"github.com/sluicehq/sluice/sluicetype"
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

// minuteOps serves the hub live reads at a chosen minute and counts its
// history reads.
type minuteOps struct {
	ops
	minute  time.Time
	prev    map[string]int64
	history atomic.Int64
}

func (m *minuteOps) QueuesLive(context.Context, map[string]int) ([]admin.QueueLive, error) {
	return []admin.QueueLive{{Queue: "q", Partitions: 2, Depth: map[string]int64{}, Minute: m.minute,
		Finished: map[string]int64{flow.StateCompleted: 1}, Previous: m.prev}}, nil
}

func (m *minuteOps) QueueHistory(_ context.Context, _ string, _, minutes int) ([]admin.MinuteCount, error) {
	m.history.Add(1)
	return make([]admin.MinuteCount, minutes), nil
}

// TestHistoryTurnsWithLiveRead: when the minute turns, the minute just
// ended comes complete with the live read: the chart shows its final
// counts and the hub makes no history read; after a gap of several
// minutes it reads the minutes missed.
func TestHistoryTurnsWithLiveRead(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	m := &minuteOps{minute: t0, prev: map[string]int64{}}
	h := newHub(m, time.Second, func(err error) { t.Error(err) })
	h.queues, h.workers = []queueInfo{{Name: "q", Partitions: 2}}, []sluicetype.WorkerInfo{}
	h.tick = 1 // no queue or worker read
	read := func() []point {
		t.Helper()
		snap, err := h.read(context.Background())
		testkit.Must(t, err)
		return snap.Queues[0].Series
	}
	read() // the hour, once
	m.minute, m.prev = t0.Add(time.Minute), map[string]int64{flow.StateCompleted: 7, flow.StateArchived: 2}
	s := read()
	if got := s[len(s)-2]; got != (point{7, 2}) || m.history.Load() != 1 {
		t.Errorf("after the turn: ended minute %v (want [7 2]), %d history reads (want 1: the first)", got, m.history.Load())
	}
	if got := s[len(s)-1]; got != (point{1, 0}) {
		t.Errorf("current minute %v, want [1 0]", got)
	}
	m.minute = t0.Add(4 * time.Minute)
	read()
	if m.history.Load() != 2 {
		t.Errorf("after a 3-minute gap: %d history reads, want 2", m.history.Load())
	}
}
