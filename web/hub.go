package web

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Bounds of the live stream.
const (
	historyMinutes = 60  // the overview chart
	maxWatchedJobs = 100 // jobs whose state the stream follows
	// The slower reads, by age rather than by count of reads (pages read
	// too, and may be the only readers): the stream re-reads the workers
	// once streamWorkersAge old, a page once pageWorkersAge old.
	streamWorkersAge = 5 * time.Second
	pageWorkersAge   = 2 * time.Second
)

// hub is the console's one live stream: a poller goroutine, running while
// any tab subscribes, reads the counters once per interval and fans the
// result out to every subscriber. Pages rendered meanwhile read the same
// snapshot, so n tabs cost Redis what one does.
type hub struct {
	ops      ops
	interval time.Duration
	onError  func(error)
	now      func() time.Time // time.Now; tests set their own

	compute    sync.Mutex // one read of Redis at a time; guards the fields below
	snap       *snapshot
	workers    []sluicetype.WorkerInfo
	badWorkers []fault             // the worker records that could not be read
	workersAt  time.Time           // when workers were read
	history    map[string][]point  // per queue, historyMinutes, oldest first
	minute     time.Time           // the minute history ends with
	briefs     map[string]jobEvent // the followed jobs as last sent

	mu      sync.Mutex // guards subs, watched, stop
	subs    map[*subscriber]struct{}
	watched map[string]int // job ID -> subscribers following it
	stop    chan struct{}  // closed to stop the poller; nil when none runs
	done    chan struct{}  // closed when the poller has stopped
}

// snapshot is what the overview shows, as read at At.
type snapshot struct {
	At         time.Time
	Queues     []queueView
	Workers    []sluicetype.WorkerInfo
	BadWorkers []fault // worker records that could not be read
	// Registered is the number of queues in the registry: more than
	// Queues when the listing stopped at admin.MaxQueuesListed.
	Registered int
	// Uncounted is set when the listing reached admin.MaxQueuesListed
	// and the registry could not be counted: it may have left queues out.
	Uncounted bool
	json      []byte // the overview event's data
}

// queueView is one queue of the overview.
type queueView struct {
	Name       string           `json:"name"`
	Partitions int              `json:"partitions"`
	Paused     int              `json:"paused"`
	Depth      map[string]int64 `json:"depth"`  // nil when the counters could not be read (Err)
	Done       int64            `json:"done"`   // completed in the last whole minute
	Failed     int64            `json:"failed"` // archived or quarantined in the last whole minute
	Series     []point          `json:"series"` // the last hour, per minute, the current one last
	// Err says why the queue's counters (Depth nil) or its chart could not
	// be read: its data is corrupt. The other queues are shown as usual.
	Err string `json:"err,omitempty"`
}

// fault is an entry of a listing (a worker, a schedule) that could not be
// read, shown as a row with its error.
type fault struct {
	Name, Err string
}

// faultsOf are the rows of the entries es could not be read.
func faultsOf(es []*store.EntryError) []fault {
	out := make([]fault, len(es))
	for i, e := range es {
		out[i] = fault{Name: e.Name, Err: e.Err.Error()}
	}
	return out
}

// point is one minute of a queue's chart: jobs completed and failed.
type point [2]int64

// event is one message of the stream.
type event struct {
	name string
	data []byte
}

// subscriber is one open stream.
type subscriber struct {
	job string // a job ID followed, "" for none
	ch  chan event
	// fresh: the followed job's state is owed to it, changed or not (a
	// stream just opened, or one that missed a job event): the changes
	// are worked out once for every subscriber, and another tab that
	// followed the job first may have taken the last one. Guarded by the
	// hub's mu.
	fresh bool
}

func newHub(o ops, interval time.Duration, onError func(error)) *hub {
	return &hub{ops: o, interval: interval, onError: onError, now: time.Now, subs: map[*subscriber]struct{}{},
		watched: map[string]int{}, history: map[string][]point{}, briefs: map[string]jobEvent{}}
}

// subscribe adds a subscriber following job (may be ""), and starts the
// poller if none runs.
func (h *hub) subscribe(job string) *subscriber {
	s := &subscriber{ch: make(chan event, 4)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if job != "" && (h.watched[job] > 0 || len(h.watched) < maxWatchedJobs) {
		s.job, s.fresh = job, true
		h.watched[job]++
	}
	h.subs[s] = struct{}{}
	if h.stop == nil {
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		go h.poll(h.stop, h.done)
	}
	return s
}

// unsubscribe removes s and stops the poller when s was the last.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	if s.job != "" {
		if h.watched[s.job]--; h.watched[s.job] <= 0 {
			delete(h.watched, s.job)
		}
	}
	if len(h.subs) == 0 && h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

// running reports whether a poller runs, and returns a channel closed
// when it stops.
func (h *hub) running() (bool, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop != nil, h.done
}

func (h *hub) poll(stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.publish(ctx)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// publish refreshes the snapshot and the followed jobs, and sends them to
// the subscribers.
func (h *hub) publish(ctx context.Context) {
	snap, err := h.current(ctx, streamWorkersAge)
	if err != nil {
		if ctx.Err() == nil {
			h.onError(err)
		}
		return
	}
	h.mu.Lock()
	ids := make([]string, 0, len(h.watched))
	for id := range h.watched {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	changed, all, err := h.followJobs(ctx, ids)
	if err != nil && ctx.Err() == nil {
		h.onError(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		send(s, event{"overview", snap.json})
		if s.job == "" {
			continue
		}
		data, ok := changed[s.job]
		if ev, known := all[s.job]; !ok && s.fresh && known {
			data, ok = marshalEvent(ev), true
		}
		if ok {
			s.fresh = !send(s, event{"job", data}) // dropped: owed again
		}
	}
}

// send queues ev for s, dropping it when s is behind (the next overview
// carries the whole state again; a dropped job event is owed), and
// reports whether it was queued.
func send(s *subscriber, ev event) bool {
	select {
	case s.ch <- ev:
		return true
	default:
		return false
	}
}

// jobEvent is the data of a job event: the brief, and Error in place of
// its Err (why the job cannot be read: its key holds another type, its
// partition is at a newer data model), as text, so that events compare
// with == and a job that stays unreadable is not sent again every poll.
type jobEvent struct {
	ID string `json:"id"`
	admin.JobBrief
	Error string `json:"error,omitempty"`
}

// eventOf is job id's event data for brief b.
func eventOf(id string, b admin.JobBrief) jobEvent {
	ev := jobEvent{ID: id, JobBrief: b}
	if b.Err != nil {
		ev.Error, ev.Err = b.Err.Error(), nil
	}
	return ev
}

// followJobs reads the followed jobs and returns the event data of those
// whose state, counters or creation time (another job given the ID)
// changed since the last read (every one, the first time), and the
// events of every one read (for subscribers owed the state, encoded only
// for them).
func (h *hub) followJobs(ctx context.Context, ids []string) (changed map[string][]byte, all map[string]jobEvent, err error) {
	h.compute.Lock()
	defer h.compute.Unlock()
	if len(ids) == 0 {
		clear(h.briefs)
		return nil, nil, nil
	}
	bs, err := h.ops.JobBriefs(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	changed, all = map[string][]byte{}, make(map[string]jobEvent, len(bs))
	for id, b := range bs {
		ev := eventOf(id, b)
		all[id] = ev
		if old, ok := h.briefs[id]; !ok || old != ev {
			changed[id] = marshalEvent(ev)
		}
	}
	h.briefs = all
	return changed, all, nil
}

// marshalEvent is a job event's data.
func marshalEvent(ev jobEvent) []byte {
	data, _ := json.Marshal(ev)
	return data
}

// current returns the snapshot with workers read less than workersAge
// ago. It reads Redis unless the last read is younger than half the
// interval, so the pages and the poller share it; when only its workers
// are too old (a page wants them fresher than the stream does), it reads
// the workers alone.
func (h *hub) current(ctx context.Context, workersAge time.Duration) (*snapshot, error) {
	h.compute.Lock()
	defer h.compute.Unlock()
	now := h.now()
	if h.snap != nil && now.Sub(h.snap.At) < h.interval/2 {
		if now.Sub(h.workersAt) < workersAge {
			return h.snap, nil
		}
		if err := h.readWorkers(ctx, now); err != nil {
			return nil, err
		}
		snap := *h.snap
		snap.Workers, snap.BadWorkers = h.workers, h.badWorkers
		if err := snap.encode(); err != nil {
			return nil, err
		}
		h.snap = &snap
		return h.snap, nil
	}
	snap, err := h.read(ctx, now, workersAge)
	if err != nil {
		return nil, err
	}
	h.snap = snap
	return snap, nil
}

// readWorkers reads the live workers (one call, whatever the number of
// queues and partitions). A worker whose record could not be read is kept
// as a fault, not an error: it hides no other.
func (h *hub) readWorkers(ctx context.Context, now time.Time) error {
	ws, err := h.ops.Workers(ctx)
	es, only := store.EntryErrors(err)
	if !only {
		return err
	}
	h.workers, h.badWorkers, h.workersAt = ws, faultsOf(es), now
	return nil
}

// read reads a snapshot at now: the queue registry (one read) and each
// partition's counters, paused flag and current minute's finished counts
// (one bounded call each, admin.Client.QueuesLive), and the registry's
// count when the listing reached its bound; the workers when
// their last read is workersAge old; the hour's history once per queue,
// and the minutes since the last read when a minute ends. A queue whose
// data is corrupt is shown with its error.
func (h *hub) read(ctx context.Context, now time.Time, workersAge time.Duration) (*snapshot, error) {
	if h.workersAt.IsZero() || now.Sub(h.workersAt) >= workersAge {
		if err := h.readWorkers(ctx, now); err != nil {
			return nil, err
		}
	}
	live, err := h.ops.QueuesLive(ctx, nil)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{At: now, Workers: h.workers, BadWorkers: h.badWorkers, Registered: len(live)}
	if len(live) >= admin.MaxQueuesListed {
		// the listing stops there: the registry's count (one HLEN) says
		// whether it left queues out; the listing is whole without it,
		// so a failed count is logged and only the notice changes
		n, err := h.ops.QueueCount(ctx)
		switch {
		case err == nil:
			snap.Registered = max(n, len(live))
		case ctx.Err() != nil:
			return nil, err
		default:
			h.onError(fmt.Errorf("counting the queue registry: %w", err))
			snap.Uncounted = true
		}
	}
	histErrs, err := h.updateHistory(ctx, live)
	if err != nil {
		return nil, err
	}
	for _, q := range live {
		if q.Err != nil {
			snap.Queues = append(snap.Queues, queueView{Name: q.Queue, Partitions: q.Partitions, Err: q.Err.Error()})
			continue
		}
		series := h.history[q.Queue]
		v := queueView{Name: q.Queue, Partitions: q.Partitions, Paused: q.Paused, Depth: q.Depth, Series: series}
		if n := len(series); n >= 2 {
			v.Done, v.Failed = series[n-2][0], series[n-2][1]
		}
		if err := histErrs[q.Queue]; err != nil {
			v.Err = "the last hour could not be read: " + err.Error()
		}
		snap.Queues = append(snap.Queues, v)
	}
	if err := snap.encode(); err != nil {
		return nil, err
	}
	return snap, nil
}

// encode sets the overview event's data.
func (s *snapshot) encode() error {
	data, err := json.Marshal(map[string]any{"at": s.At.UnixMilli(), "queues": s.Queues, "workers": len(s.Workers)})
	if err != nil {
		return err
	}
	s.json = data
	return nil
}

// updateHistory keeps each queue's last hour: read whole for a queue not
// seen before; when the minute turned, the minute just ended comes
// complete with the live read (it may have grown after its last read),
// and the minutes since the last read are read again when more than one
// went by; the current minute comes from live. A queue whose live read
// failed has its history dropped; one whose history could not be read has its
// error in the map returned (and is read whole next time).
func (h *hub) updateHistory(ctx context.Context, live []admin.QueueLive) (map[string]error, error) {
	i := slices.IndexFunc(live, func(q admin.QueueLive) bool { return q.Err == nil })
	if i < 0 {
		return nil, nil
	}
	minute := live[i].Minute
	turned := !h.minute.IsZero() && minute.After(h.minute)
	errs := map[string]error{}
	for _, q := range live {
		if q.Err != nil {
			delete(h.history, q.Queue) // read whole once it reads again
			continue
		}
		old, seen := h.history[q.Queue]
		switch {
		case !seen || minute.Sub(h.minute) >= historyMinutes*time.Minute:
			ms, err := h.ops.QueueHistory(ctx, q.Queue, q.Partitions, historyMinutes)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				errs[q.Queue] = err
				delete(h.history, q.Queue)
				continue
			}
			h.history[q.Queue] = points(ms)
		case turned && minute.Sub(h.minute) == time.Minute:
			// the minute just ended, complete, came with the live read
			s := append(slices.Clone(old[1:]), point{})
			s[len(s)-2] = pointOf(q.Previous)
			h.history[q.Queue] = s
		case turned:
			shift := int(minute.Sub(h.minute) / time.Minute)
			ms, err := h.ops.QueueHistory(ctx, q.Queue, q.Partitions, shift+1)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				errs[q.Queue] = err
				delete(h.history, q.Queue)
				continue
			}
			s := append(slices.Clone(old[shift:]), make([]point, shift)...)
			copy(s[len(s)-shift-1:], points(ms))
			h.history[q.Queue] = s
		}
		s := slices.Clone(h.history[q.Queue])
		s[len(s)-1] = pointOf(q.Finished)
		h.history[q.Queue] = s
	}
	h.minute = minute
	return errs, nil
}

func points(ms []admin.MinuteCount) []point {
	out := make([]point, len(ms))
	for i, m := range ms {
		out[i] = pointOf(m.Finished)
	}
	return out
}

func pointOf(finished map[string]int64) point {
	return point{finished[flow.StateCompleted], finished[flow.StateArchived] + finished[flow.StateQuarantined]}
}
