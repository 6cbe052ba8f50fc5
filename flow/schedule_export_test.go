package flow

import "time"

// SetOnStep lets the external tests observe scheduling rounds: f is called
// after each round of a schedule, once the timer for the next is armed,
// with the store time of the round (zero after an error). Set it before Run.
func SetOnStep(s *Scheduler, f func(name string, now time.Time)) { s.onStep = f }
