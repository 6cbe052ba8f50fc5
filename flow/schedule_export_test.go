package flow

import (
	"context"
	"time"
)

// SetOnStep lets the external tests observe scheduling rounds: f is called
// after each round of a schedule, once the timer for the next is armed,
// with the store time of the round (zero after an error). Set it before Run.
func SetOnStep(s *Scheduler, f func(name string, now time.Time)) { s.onStep = f }

// EnqueueTicks enqueues and confirms ticks of schedule name as s's rounds
// do: what a scheduler that claimed them, and stalled, does when it
// resumes.
func EnqueueTicks(s *Scheduler, name string, ticks ...time.Time) error {
	for _, sc := range s.scheds {
		if sc.Name == name {
			return s.enqueue(context.Background(), sc, ticks)
		}
	}
	return ErrScheduleNotFound
}
