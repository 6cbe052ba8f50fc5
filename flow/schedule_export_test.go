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
// do: what a scheduler that claimed them, and stalled once it had found
// its claim fresh, does when it resumes.
func EnqueueTicks(s *Scheduler, name string, ticks ...time.Time) error {
	return EnqueueClaimedTicks(s, name, s.clk.Now(), ticks...)
}

// EnqueueClaimedTicks is EnqueueTicks by a scheduler that sent the claim
// of the ticks at claimed, by its clock.
func EnqueueClaimedTicks(s *Scheduler, name string, claimed time.Time, ticks ...time.Time) error {
	for _, sc := range s.scheds {
		if sc.Name == name {
			return s.enqueue(context.Background(), sc, ticks, claimed)
		}
	}
	return ErrScheduleNotFound
}

// Round runs one scheduling round of schedule name, as the scheduler's
// loop does.
func Round(s *Scheduler, name string) error {
	for _, sc := range s.scheds {
		if sc.Name == name {
			_, _, err := s.round(context.Background(), sc)
			return err
		}
	}
	return ErrScheduleNotFound
}
