package flow_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// brittlePanics makes brittle's Kind panic: the schedule's Add runs it
// fine, a tick's enqueue later does not.
var brittlePanics atomic.Bool

type brittle struct{}

func (brittle) Kind() string {
	if brittlePanics.Load() {
		panic("brittle: Kind")
	}
	return "brittle"
}

// TestSchedulePanicIsThatSchedulesAlone: a schedule whose arguments' code
// panics at its ticks (its Kind here; their encoding alike) ends neither
// the process nor the scheduler's other schedules, and loses no tick:
// once its code no longer panics, each of its ticks is enqueued once (its
// policy catches up: the default drops ticks missed meanwhile).
func TestSchedulePanicIsThatSchedulesAlone(t *testing.T) {
	t.Parallel()
	e := newSchedEnv(t)
	e.reg = flow.NewRegistry()
	if err := flow.Register(e.reg, func(context.Context, *flow.Job[report]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := flow.Register(e.reg, func(context.Context, *flow.Job[brittle]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	s := e.newScheduler(
		flow.Schedule{Name: "minutely", Cron: "* * * * *", Args: report{Team: "ops"}},
		flow.Schedule{Name: "brittle", Cron: "* * * * *", Args: brittle{}, Missed: flow.CatchUp(10)}, // none dropped
	)
	brittlePanics.Store(true)
	t.Cleanup(func() { brittlePanics.Store(false) })
	e.run(s)
	// both schedules start at t0 (a schedule's first round starts it from
	// its store time: a round of brittle's run after the clock moved would
	// leave out the ticks before it, and the test would miss them)
	e.wait("minutely", 1)
	e.wait("brittle", 1)
	for range 3 {
		e.clk.Advance(time.Minute)
		e.wait("minutely", 1)
	}
	if q := e.queued(); !slices.Equal(q, tickIDs("minutely", minutes(1, 2, 3)...)) {
		t.Fatalf("queued while brittle panics: %v, want minutely's ticks 1-3 alone", q)
	}
	brittlePanics.Store(false)
	// the clock moves 10 s at a time, after brittle's round at it (if its
	// timer fired): its retries, then the ticks it claimed and left
	// pending, which a sync hands over as abandoned 30 s on
	want := tickIDs("brittle", minutes(1, 2, 3)...)
	var seen map[string]int
	for range 60 {
		seen = map[string]int{}
		for _, id := range e.queued() {
			seen[id]++
		}
		if seen[want[0]] == 1 && seen[want[1]] == 1 && seen[want[2]] == 1 {
			break
		}
		e.clk.Advance(10 * time.Second)
		for ran := false; !ran; {
			select {
			case r := <-e.rounds:
				ran = r.name == "brittle"
			case <-time.After(100 * time.Millisecond):
				ran = true // its timer is not due yet
			}
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("%s queued %d times, want once", id, seen[id])
		}
	}
}
