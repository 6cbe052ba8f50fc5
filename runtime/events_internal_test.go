package runtime

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEventsKeepJobOrder: the next claim of a job can return before the
// reply to the ack of its previous attempt; the events of the later
// attempts wait for that outcome's event, so a job's events stay in
// order, and another job's events are not held.
func TestEventsKeepJobOrder(t *testing.T) {
	w := &Worker{ev: newEvents(Options{OnEvent: func(context.Context, Event) {}, EventBuffer: 16})}
	a1 := &Attempt{ID: "q:0:a", Fence: 1}
	a2 := &Attempt{ID: "q:0:a", Fence: 2, Attempt: 1}
	other := &Attempt{ID: "q:0:b", Fence: 7}
	w.startedEvent(a1)
	w.acking(a1)                                    // a1's ack is in flight...
	w.startedEvent(a2)                              // ...and the job's next claim already returned
	w.startedEvent(other)                           // not held: another job
	w.acking(a2)                                    // a2 is fast: acked before a1's reply is read
	w.endEvent(a2, &settled{event: EventCompleted}) // held
	w.endEvent(a1, &settled{event: EventRetried})   // releases a2's events
	w.startedEvent(&Attempt{ID: "q:0:a", Fence: 3}) // nothing held any more
	type ev struct {
		Job   string
		Type  EventType
		Fence int64
	}
	var got []ev
	for len(w.ev.queue) > 0 {
		e := <-w.ev.queue
		got = append(got, ev{e.JobID, e.Type, e.Fence})
	}
	want := []ev{
		{"q:0:a", EventStarted, 1}, {"q:0:b", EventStarted, 7}, {"q:0:a", EventRetried, 1},
		{"q:0:a", EventStarted, 2}, {"q:0:a", EventCompleted, 2}, {"q:0:a", EventStarted, 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(w.ev.acking) != 0 {
		t.Errorf("%d jobs still held after their outcomes", len(w.ev.acking))
	}
}
