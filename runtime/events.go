package runtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// EventType names what happened to an attempt.
type EventType string

// The events of an attempt: Started when its handler is about to run,
// then exactly one of the others when its outcome is settled.
const (
	// EventStarted: the attempt was claimed and its handler starts.
	EventStarted EventType = "started"
	// EventCompleted: the handler returned nil and the job completed.
	EventCompleted EventType = "completed"
	// EventRetried: the attempt failed (an error, a timeout, completion
	// effects that could not apply) and the job will run again (NextRun).
	EventRetried EventType = "retried"
	// EventFailed: the attempt ended the job in archived, the dead-letter
	// state: its attempts are spent, or it was skipped, parked or past its
	// deadline (Reason says which).
	EventFailed EventType = "failed"
	// EventCrashed: the handler (or a middleware) panicked, returned a
	// crash error, or the attempt lost its lease (Reason "lease_lost"; Err
	// wraps ErrLeaseLost or is ErrStale), or Redis did not take its outcome
	// after retrying (Reason "ack_failed", Err Redis's error, State "": the
	// job's lease will expire and a reaper reclaim it, as a crash). State
	// "quarantined" says the crash reached the crash limit.
	EventCrashed EventType = "crashed"
	// EventSnoozed: the job was put back without spending an attempt
	// (flow.Snooze, flow.RateLimited, Options.NonConsuming).
	EventSnoozed EventType = "snoozed"
	// EventSuspended: a workflow waits (for its children, a durable sleep
	// or a signal).
	EventSuspended EventType = "suspended"
	// EventCancelled: an operator cancelled the job, or its handler
	// revoked it (flow.Revoke).
	EventCancelled EventType = "cancelled"
	// EventReleased: shutdown handed the job back without charging it.
	EventReleased EventType = "released"
)

// Event is one thing that happened to an attempt run by this worker; see
// Options.OnEvent.
type Event struct {
	Type         EventType
	JobID        string
	Queue        string
	Kind         string
	Attempt      int // this attempt's number: 1 on the first try (Attempt.Attempt+1)
	MaxAttempts  int
	CrashAttempt int // crashes before this attempt
	Fence        int64
	// State is the job's state after the outcome ("" for EventStarted, and
	// when no outcome was written: a lost lease).
	State string
	// Reason classifies the outcome: the error class of a retry (error,
	// timeout, effect), the archive reason (attempts_exhausted, skipped,
	// deadline_exceeded, a park reason, malformed when the store found
	// the job's data corrupt), crash_limit for a quarantine,
	// panic or a crash reason, lease_lost, ack_failed, cancelled, revoked.
	Reason string
	// Err is what failed the attempt: the handler's error, a *PanicError,
	// the cause that stopped it (wrapping ErrTimeout, ErrDeadline,
	// ErrLeaseLost), ErrEffectsFailed, or the ack's error. Nil otherwise.
	Err error
	// Duration is how long the attempt ran, from its start to its outcome
	// (worker clock); 0 for EventStarted.
	Duration time.Duration
	// NextRun is when the job is due again after a retried, crashed (not
	// quarantined) or snoozed outcome, by the worker's clock (Redis decides
	// by its own, so it may differ by their skew), and no later than the
	// job's deadline, when it is archived rather than run; zero otherwise.
	NextRun time.Time
	// At is when it happened (worker clock).
	At time.Time
}

// defaultEventBuffer is Options.EventBuffer's default.
const defaultEventBuffer = 1024

// events delivers a worker's events to Options.OnEvent from one goroutine
// per Run, through a bounded queue: a worker never waits for OnEvent, and
// when the queue is full the event is dropped and counted.
type events struct {
	queue    chan Event
	dropped  atomic.Uint64
	dropping atomic.Bool // dropping since the last event queued: logged once

	// acking holds the jobs whose outcome this worker is writing (acking),
	// with the events of their later attempts that wait for that
	// outcome's event, so that a job's events keep their order.
	mu     sync.Mutex
	acking map[string]*heldEvents
}

// heldEvents are a job's events waiting for the outcome event of the
// attempt with fence.
type heldEvents struct {
	fence  int64
	events []Event
}

// newEvents returns the event queue of o, or nil when o has no OnEvent.
func newEvents(o Options) *events {
	if o.OnEvent == nil {
		return nil
	}
	return &events{queue: make(chan Event, o.EventBuffer), acking: make(map[string]*heldEvents)}
}

// DroppedEvents is how many events this worker dropped because
// Options.OnEvent fell behind by more than Options.EventBuffer events.
func (w *Worker) DroppedEvents() uint64 {
	if w.ev == nil {
		return 0
	}
	return w.ev.dropped.Load()
}

// emit queues e for OnEvent, or drops it if the queue is full. Callers
// check w.ev != nil first, so that no event is built without OnEvent.
func (w *Worker) emit(e Event) {
	select {
	case w.ev.queue <- e:
		if w.ev.dropping.Load() {
			w.ev.dropping.Store(false)
		}
	default:
		w.ev.dropped.Add(1)
		if w.ev.dropping.CompareAndSwap(false, true) {
			w.log.Warn("event handler falling behind; dropping events", "buffer", cap(w.ev.queue),
				keyJob, e.JobID, "event", string(e.Type))
		}
	}
}

// startedEvent is an attempt's EventStarted.
func (w *Worker) startedEvent(a *Attempt) {
	w.send(a, Event{
		Type: EventStarted, JobID: a.ID, Queue: a.Queue, Kind: a.Kind, Attempt: a.Attempt + 1,
		MaxAttempts: a.MaxAttempts, CrashAttempt: a.CrashAttempt, Fence: a.Fence, At: a.tel.start,
	}, false)
}

// acking notes that the outcome of attempt a is being written. The next
// claim of its job can beat the ack's reply, so until a's outcome event
// is sent, the job's later events wait behind it. The ack is sent after
// this call, so no claim can return the job before it.
func (w *Worker) acking(a *Attempt) {
	w.ev.mu.Lock()
	defer w.ev.mu.Unlock()
	if _, ok := w.ev.acking[a.ID]; !ok { // else an earlier attempt's wait holds it
		w.ev.acking[a.ID] = &heldEvents{fence: a.Fence}
	}
}

// endEvent is the event of an attempt's outcome o.
func (w *Worker) endEvent(a *Attempt, o *settled) {
	w.send(a, Event{
		Type: o.event, JobID: a.ID, Queue: a.Queue, Kind: a.Kind, Attempt: a.Attempt + 1,
		MaxAttempts: a.MaxAttempts, CrashAttempt: a.CrashAttempt, Fence: a.Fence,
		State: o.state, Reason: o.reason, Err: o.err, Duration: o.duration, NextRun: o.next, At: o.at,
	}, true)
}

// send queues e, an event of a's job, or holds it while an earlier
// attempt's outcome is being acked; that outcome (end) releases the
// events held behind it, in order.
func (w *Worker) send(a *Attempt, e Event, end bool) {
	w.ev.mu.Lock()
	defer w.ev.mu.Unlock()
	h, ok := w.ev.acking[a.ID]
	switch {
	case !ok:
		w.emit(e)
	case !end || h.fence != a.Fence:
		h.events = append(h.events, e)
	default:
		delete(w.ev.acking, a.ID)
		w.emit(e)
		for _, e := range h.events {
			w.emit(e)
		}
	}
}

// startEvents delivers events while the worker runs; the function it
// returns stops delivery once the attempts are settled: it delivers the
// events still queued, waiting for OnEvent up to CancelGrace, then
// cancels OnEvent's context and returns.
func (w *Worker) startEvents(bg context.Context) (stop func()) {
	if w.ev == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancelCause(bg)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case e := <-w.ev.queue:
				w.callOnEvent(ctx, e)
				continue
			case <-quit:
			}
			for {
				select {
				case e := <-w.ev.queue:
					w.callOnEvent(ctx, e)
				default:
					return
				}
			}
		}
	}()
	return func() {
		defer cancel(ErrShutdown)
		close(quit)
		t := w.clk.NewTimer(w.opts.CancelGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C():
			w.log.Warn("event handler still running at shutdown; not waiting for it")
		}
	}
}

func (w *Worker) callOnEvent(ctx context.Context, e Event) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("event handler panicked", keyJob, e.JobID, "event", string(e.Type),
				keyPanic, fmt.Sprint(p), keyStack, string(debug.Stack()))
		}
	}()
	w.opts.OnEvent(ctx, e)
}
