package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// seenEvent is the part of an Event the tests compare: Err as its text.
type seenEvent struct {
	Type                               runtime.EventType
	JobID, Kind, Queue, State, Reason  string
	Attempt, MaxAttempts, CrashAttempt int
	Fence                              int64
	Err                                string
	Duration                           time.Duration
	NextRun                            time.Time
}

func seen(e runtime.Event) seenEvent {
	s := seenEvent{Type: e.Type, JobID: e.JobID, Kind: e.Kind, Queue: e.Queue, State: e.State, Reason: e.Reason,
		Attempt: e.Attempt, MaxAttempts: e.MaxAttempts, CrashAttempt: e.CrashAttempt, Fence: e.Fence,
		Duration: e.Duration, NextRun: e.NextRun}
	if e.Err != nil {
		s.Err = e.Err.Error()
	}
	return s
}

// recvEvents receives n events from ch.
func recvEvents(t *testing.T, ch <-chan runtime.Event, n int) []runtime.Event {
	t.Helper()
	out := make([]runtime.Event, n)
	for i := range out {
		out[i] = testkit.Recv(t, ch, fmt.Sprintf("event %d", i+1))
	}
	return out
}

// TestEventsRetriedThenCompleted: a job that fails once and then
// completes yields started, retried, started, completed, in that order,
// with its counters, the error, the time it is due again and the time
// each attempt ran.
func TestEventsRetriedThenCompleted(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := register(t, func(_ context.Context, job *flow.Job[obsArgs]) error {
		if job.Attempt == 0 {
			clk.Advance(3 * time.Second) // the attempt runs 3s by the worker's clock
			return errors.New("not yet")
		}
		return nil
	})
	events := testkit.Chan[runtime.Event]()
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, Backoff: func(int) time.Duration { return 0 },
		OnEvent: func(_ context.Context, ev runtime.Event) { events <- ev }})
	id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(5))
	e.WaitState(id, flow.StateCompleted)
	got := recvEvents(t, events, 4)
	now := clk.Now()
	base := seenEvent{JobID: id, Kind: "obs", Queue: "default", MaxAttempts: 5}
	ev := func(f func(*seenEvent)) seenEvent {
		s := base
		f(&s)
		return s
	}
	want := []seenEvent{
		ev(func(s *seenEvent) { s.Type, s.Attempt, s.Fence = runtime.EventStarted, 1, 1 }),
		ev(func(s *seenEvent) {
			s.Type, s.Attempt, s.Fence, s.State, s.Reason, s.Err = runtime.EventRetried, 1, 1, flow.StateRetryable, "error", "not yet"
			s.Duration, s.NextRun = 3*time.Second, now
		}),
		ev(func(s *seenEvent) { s.Type, s.Attempt, s.Fence = runtime.EventStarted, 2, 2 }),
		ev(func(s *seenEvent) {
			s.Type, s.Attempt, s.Fence, s.State = runtime.EventCompleted, 2, 2, flow.StateCompleted
		}),
	}
	var gotSeen []seenEvent
	for _, g := range got {
		gotSeen = append(gotSeen, seen(g))
	}
	if diff := cmp.Diff(want, gotSeen); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	testkit.NoRecv(t, events, "event after the completion")
}

// TestEventsNextRunStopsAtDeadline: a retry whose backoff ends past the
// job's deadline is due at the deadline (the store archives it then), and
// its event's NextRun says so, not the end of the backoff.
func TestEventsNextRunStopsAtDeadline(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return errors.New("not yet") })
	events := testkit.Chan[runtime.Event]()
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, Backoff: func(int) time.Duration { return time.Hour },
		OnEvent: func(_ context.Context, ev runtime.Event) { events <- ev }})
	deadline := clk.Now().Add(time.Minute).Truncate(time.Millisecond)
	id := e.Enqueue(obsArgs{}, flow.WithMaxAttempts(5), flow.WithDeadline(deadline))
	got := recvEvents(t, events, 2)
	if got[1].Type != runtime.EventRetried || !got[1].NextRun.Equal(deadline) {
		t.Fatalf("second event %+v, want retried with NextRun %v (the deadline, before the hour's backoff)", seen(got[1]), deadline)
	}
	if j := e.WaitState(id, flow.StateRetryable); !j.RunAt.Equal(deadline) {
		t.Fatalf("job due at %v, want its deadline %v", j.RunAt, deadline)
	}
}

// TestEventsCrash: a handler that panics once yields started, crashed
// (its Err a *PanicError with the value and the stack), then started and
// completed for its next attempt, one crash on record.
func TestEventsCrash(t *testing.T) {
	t.Parallel()
	clk := newTestClock(fakeStart())
	e := newEnv(t, clk)
	reg := register(t, func(_ context.Context, job *flow.Job[obsArgs]) error {
		if job.CrashAttempt == 0 {
			panic("kaboom")
		}
		return nil
	})
	events := testkit.Chan[runtime.Event]()
	e.startWorker(reg, runtime.Options{Clock: clk, IdlePoll: time.Hour, CrashDelay: noCrashDelay,
		OnEvent: func(_ context.Context, ev runtime.Event) { events <- ev }})
	id := e.Enqueue(obsArgs{})
	e.WaitState(id, flow.StateCompleted)
	got := recvEvents(t, events, 4)
	var types []runtime.EventType
	for _, g := range got {
		types = append(types, g.Type)
	}
	wantTypes := []runtime.EventType{runtime.EventStarted, runtime.EventCrashed, runtime.EventStarted, runtime.EventCompleted}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}
	crash := got[1]
	var pe *runtime.PanicError
	if !errors.As(crash.Err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
		t.Errorf("crash event's Err %v, want a *PanicError of kaboom with a stack", crash.Err)
	}
	if crash.State != flow.StateAvailable || crash.Reason != "panic" || crash.Attempt != 1 || crash.CrashAttempt != 0 ||
		!crash.NextRun.Equal(clk.Now()) {
		t.Errorf("crash event %+v", seen(crash))
	}
	if got[2].CrashAttempt != 1 || got[2].Attempt != 1 || got[3].CrashAttempt != 1 {
		t.Errorf("second attempt's events %+v, %+v: want crash attempt 1, attempt 1", seen(got[2]), seen(got[3]))
	}
}

// TestEventsDropWhenHandlerBlocks: an OnEvent that blocks does not hold
// up jobs: with a buffer of one event, the worker runs a second job to
// completion while OnEvent is stuck on the first event, drops the events
// that do not fit and counts them; once OnEvent returns, the queued ones
// arrive in order.
func TestEventsDropWhenHandlerBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	entered, unblock := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-unblock:
		default:
			close(unblock)
		}
	})
	events := testkit.Chan[runtime.Event]()
	first := true
	reg := register(t, func(_ context.Context, job *flow.Job[obsArgs]) error {
		if job.Args.N == 1 {
			<-entered // OnEvent holds the started event: the next one queues
		}
		return nil
	})
	w := e.startWorker(reg, runtime.Options{EventBuffer: 1, OnEvent: func(_ context.Context, ev runtime.Event) {
		if first { // one goroutine calls OnEvent: no race
			first = false
			close(entered)
			<-unblock
		}
		events <- ev
	}})
	one := e.Enqueue(obsArgs{N: 1})
	e.settled(one, flow.StateCompleted) // its completed event is queued
	two := e.Enqueue(obsArgs{N: 2})
	e.settled(two, flow.StateCompleted) // its events are dropped
	if n := w.DroppedEvents(); n != 2 {
		t.Errorf("%d events dropped, want 2 (the second job's)", n)
	}
	close(unblock)
	got := recvEvents(t, events, 2)
	if got[0].Type != runtime.EventStarted || got[0].JobID != one || got[1].Type != runtime.EventCompleted || got[1].JobID != one {
		t.Errorf("events %+v, %+v: want the first job's started and completed", seen(got[0]), seen(got[1]))
	}
	testkit.NoRecv(t, events, "a dropped event")
}

// TestEventHandlerPanicIsLogged: an OnEvent that panics is logged and
// the next event is delivered all the same.
func TestEventHandlerPanicIsLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	events := testkit.Chan[runtime.Event]()
	reg := register(t, func(context.Context, *flow.Job[obsArgs]) error { return nil })
	_, logs := e.startLogged(reg, runtime.Options{OnEvent: func(_ context.Context, ev runtime.Event) {
		if ev.Type == runtime.EventStarted {
			panic("hook broke")
		}
		events <- ev
	}})
	id := e.Enqueue(obsArgs{})
	if ev := testkit.Recv(t, events, "the completed event"); ev.Type != runtime.EventCompleted || ev.JobID != id {
		t.Fatalf("event %+v, want the job's completion", seen(ev))
	}
	recs := logs.records(t, func(m map[string]any) bool { return m["msg"] == "event handler panicked" })
	if len(recs) != 1 || recs[0]["job"] != id || recs[0]["panic"] != "hook broke" || recs[0]["event"] != "started" {
		t.Errorf("records %v, want one for the started event's panic", recs)
	}
}
