package web

import (
	"context"
	"strings"
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
	snap, err := h.current(context.Background(), streamWorkersAge)
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
	h.workers, h.workersAt = []sluicetype.WorkerInfo{}, time.Now() // no worker read
	read := func() []point {
		t.Helper()
		snap, err := h.read(context.Background(), time.Now(), time.Hour)
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

// clockOps serves the hub a fixed queue, the workers it is given and
// empty counters, and counts the reads of each.
type clockOps struct {
	ops
	workers           atomic.Pointer[[]sluicetype.WorkerInfo]
	workerReads, live atomic.Int64
}

func (c *clockOps) Workers(context.Context) ([]sluicetype.WorkerInfo, error) {
	c.workerReads.Add(1)
	return *c.workers.Load(), nil
}

func (c *clockOps) QueuesLive(context.Context, map[string]int) ([]admin.QueueLive, error) {
	c.live.Add(1)
	return []admin.QueueLive{{Queue: "q", Partitions: 2, Depth: map[string]int64{}, Minute: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}}, nil
}

func (c *clockOps) QueueHistory(_ context.Context, _ string, _, minutes int) ([]admin.MinuteCount, error) {
	return make([]admin.MinuteCount, minutes), nil
}

// TestHubRefreshesByAge: the hub re-reads the workers by their age, not
// by how many reads went by: the stream every streamWorkersAge however
// often it reads (the queues, with the counters, every time); a page wants
// workers younger than pageWorkersAge, and gets them with a read of the
// workers alone while the counters are fresh; any number of reads within
// half an interval share one.
func TestHubRefreshesByAge(t *testing.T) {
	o := &clockOps{}
	o.workers.Store(&[]sluicetype.WorkerInfo{{ID: "w1"}})
	h := newHub(o, time.Second, func(err error) { t.Error(err) })
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	ctx := context.Background()
	get := func(age time.Duration) *snapshot {
		t.Helper()
		s, err := h.current(ctx, age)
		testkit.Must(t, err)
		return s
	}
	counts := func() [2]int64 { return [2]int64{o.workerReads.Load(), o.live.Load()} }

	for range 100 { // many tabs at once
		get(streamWorkersAge)
	}
	if got := counts(); got != [2]int64{1, 1} {
		t.Fatalf("100 reads at one instant: worker and live reads %v, want one each", got)
	}
	// The stream, one read a second: the workers every 5 s.
	for range 29 {
		now = now.Add(time.Second)
		get(streamWorkersAge)
	}
	if got := counts(); got != [2]int64{6, 30} {
		t.Errorf("30 s of stream: worker and live reads %v, want [6 30]", got)
	}
	now = now.Add(time.Second)
	get(streamWorkersAge)
	if got := counts(); got != [2]int64{7, 31} {
		t.Errorf("at 30 s: worker and live reads %v, want [7 31]", got)
	}

	// A page, with no stream: a new worker shows once the workers it last
	// read are pageWorkersAge old, however few pages were read meanwhile.
	o.workers.Store(&[]sluicetype.WorkerInfo{{ID: "w1"}, {ID: "w2"}})
	now = now.Add(time.Second)
	if s := get(pageWorkersAge); len(s.Workers) != 1 {
		t.Errorf("a page 1 s after the workers were read: %d workers, want the 1 read then", len(s.Workers))
	}
	now = now.Add(pageWorkersAge)
	if s := get(pageWorkersAge); len(s.Workers) != 2 {
		t.Errorf("a page %s after the workers were read: %d workers, want 2", time.Second+pageWorkersAge, len(s.Workers))
	}
	// The counters fresh, the workers old: a page reads the workers alone.
	before := counts()
	o.workers.Store(&[]sluicetype.WorkerInfo{{ID: "w3"}})
	now = now.Add(h.interval / 4)
	h.compute.Lock()
	h.workersAt = now.Add(-pageWorkersAge)
	h.compute.Unlock()
	s := get(pageWorkersAge)
	if after := counts(); len(s.Workers) != 1 || s.Workers[0].ID != "w3" || after[0] != before[0]+1 || after[1] != before[1] {
		t.Errorf("fresh counters, old workers: workers %v, reads %v then %v: want w3 by one worker read, no live read", s.Workers, before, after)
	}
	if !strings.Contains(string(s.json), `"workers":1`) {
		t.Errorf("the overview event after a workers-only read: %s", s.json)
	}
}
