package step

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Sleep waits durably for d: the first time the job reaches it, the wake
// time is fixed in Redis's time, and the job is suspended until then,
// holding no worker, no lease and no attempt. It returns nil once the wake
// time has passed, and then, as a finished step, at once on every later
// run. Until then it returns a *sluicetype.SuspendedError, which the
// handler must return (as it is or wrapped):
//
//	if err := step.Sleep(ctx, "cool-off", 72*time.Hour); err != nil {
//		return err
//	}
//
// A crash, a redeploy or a redrive does not restart the clock. name is the
// step's name and the timer's (timers are named per job).
func Sleep(ctx context.Context, name string, d time.Duration) error {
	s := Select(ctx, name)
	if d < 0 {
		s.fail(fmt.Errorf("%w: step %q sleeps for %s", ErrInvalidWait, name, d))
	}
	s.After(name, d)
	return s.Wait()
}

// SleepUntil is Sleep until the wall-clock time t, compared with Redis's
// time.
func SleepUntil(ctx context.Context, name string, t time.Time) error {
	s := Select(ctx, name)
	s.Until(name, t)
	return s.Wait()
}

// WaitSignal waits durably for the signal name (flow.Client.Signal, sluice
// jobs signal), for at most timeout (0: no limit), and returns its payload
// decoded into T with true, or T's zero value with false once the timeout
// passed. A signal sent before the job reaches the wait is kept and taken
// here; each signal is taken by one wait, with the step's checkpoint. While
// neither has come it returns a *sluicetype.SuspendedError for the handler
// to return, as Sleep does. name is the step's name, the signal's, and
// (with ".timeout") its timer's: a name of up to 92 bytes names its timer
// name+".timeout"; a longer one (up to the 100 bytes of any step name),
// which would not leave room for that, names it by its first 83 bytes, a
// hash of the whole name and ".timeout" (100 bytes). To wait for several
// things at once, use Select.
func WaitSignal[T any](ctx context.Context, name string, timeout time.Duration) (T, bool, error) {
	s := Select(ctx, name)
	sig := OnSignal[T](s, name)
	switch {
	case timeout > 0:
		s.After(timeoutTimer(name), timeout)
	case timeout < 0:
		s.fail(fmt.Errorf("%w: step %q waits %s", ErrInvalidWait, name, timeout))
	}
	if err := s.Wait(); err != nil {
		var zero T
		return zero, false, err
	}
	return sig.Value(), sig.Fired(), nil
}

// timeoutTimer is the name of the timer of WaitSignal name's timeout:
// name+".timeout" when that is a valid wait name, as every release has
// named it (a job suspended by an older one wakes by that timer); for a
// name too long for that, which older releases refused (invalid_wait),
// its first bytes and a hash of it, so that it fits store.MaxWaitName.
func timeoutTimer(name string) string {
	const suffix = ".timeout"
	if len(name)+len(suffix) <= store.MaxWaitName {
		return name + suffix
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	tag := fmt.Sprintf(".%08x", h.Sum32())
	return name[:store.MaxWaitName-len(tag)-len(suffix)] + tag + suffix
}

// ErrInvalidWait: a wait was given a bad name or duration, or nothing to
// wait for. The job is archived (reason invalid_wait).
var ErrInvalidWait = store.ErrInvalidWait

// Selector races a step's waits: timers (After, Until) and signals
// (OnSignal). Its Wait returns once the first of them has fired, recorded
// with the step's checkpoint so that every later run sees the same winner:
//
//	sel := step.Select(ctx, "approval")
//	decided := step.OnSignal[Decision](sel, "decision")
//	remind := sel.After("remind", 24*time.Hour)
//	sel.After("give-up", 72*time.Hour)
//	if err := sel.Wait(); err != nil {
//		return err // suspended until one fires
//	}
//	switch {
//	case decided.Fired(): ... decided.Value() ...
//	case remind.Fired(): ... remind, then wait again in another Select
//	default: ... gave up ...
//	}
//
// Timers are named per job and keep the wake time of the first wait on
// them: a later Select with After("give-up", 72*time.Hour) waits for the
// same moment, so a deadline holds across rounds of waiting. A signal
// there already wins over a timer that fired too; among timers, the
// earliest wins.
type Selector struct {
	st    *attempt.State
	name  string
	idx   int
	rec   *record
	cases []*Case
	err   error
	won   *Case
}

// Case is one wait of a Selector.
type Case struct {
	sel    *Selector
	key    string // "t:" timer or "s:" signal
	timer  sluicetype.Timer
	signal string
	decode func([]byte) error // a signal case's payload into its value
}

// Fired reports whether this case won its Selector's Wait.
func (c *Case) Fired() bool { return c.sel.won == c }

// SignalCase is a signal wait of a Selector, whose payload decodes into T.
type SignalCase[T any] struct {
	*Case
	value T
}

// Value is the payload of the signal that fired the case.
func (c *SignalCase[T]) Value() T { return c.value }

// Select starts the durable step name, which races the waits added to it.
func Select(ctx context.Context, name string) *Selector {
	s := &Selector{name: name}
	st, ok := attempt.From(ctx)
	if !ok {
		s.err = ErrNoAttempt
		return s
	}
	s.st = st
	if s.err = nested(ctx, name); s.err != nil {
		return s
	}
	s.idx, s.rec, s.err = begin(st, name)
	return s
}

func (s *Selector) fail(err error) {
	if s.err == nil {
		s.err = park("invalid_wait", err)
	}
}

// After adds the timer named timer, which fires d after the job first
// waits on it.
func (s *Selector) After(timer string, d time.Duration) *Case {
	if d < 0 {
		s.fail(fmt.Errorf("%w: timer %q after %s", ErrInvalidWait, timer, d))
	}
	return s.add(&Case{key: "t:" + timer, timer: sluicetype.Timer{Name: timer, After: d}})
}

// Until adds the timer named timer, which fires at t (Redis's time).
func (s *Selector) Until(timer string, t time.Time) *Case {
	if t.IsZero() {
		s.fail(fmt.Errorf("%w: timer %q at the zero time", ErrInvalidWait, timer))
	}
	return s.add(&Case{key: "t:" + timer, timer: sluicetype.Timer{Name: timer, At: t}})
}

// OnSignal adds a wait for the signal named signal to s; its payload
// decodes (msgpack) into T.
func OnSignal[T any](s *Selector, signal string) *SignalCase[T] {
	sc := &SignalCase[T]{}
	sc.Case = s.add(&Case{key: "s:" + signal, signal: signal, decode: func(b []byte) error {
		return decode(b, &sc.value)
	}})
	return sc
}

func (s *Selector) add(c *Case) *Case {
	c.sel = s
	name := c.signal + c.timer.Name
	if !store.ValidWaitName(name) {
		s.fail(fmt.Errorf("%w: %q", ErrInvalidWait, name))
	}
	for _, o := range s.cases {
		if o.key == c.key {
			s.fail(fmt.Errorf("%w: %q twice in step %q", ErrInvalidWait, name, s.name))
		}
	}
	s.cases = append(s.cases, c)
	return c
}

// decided is a Selector's checkpoint: the winning case and, for a signal,
// its payload.
type decided struct {
	Case    string `msgpack:"c"`
	Payload []byte `msgpack:"p,omitempty"`
}

// Wait returns nil once one of the waits has fired (see Fired), or the
// *sluicetype.SuspendedError the handler must return to wait for them.
func (s *Selector) Wait() error {
	if s.err != nil {
		return s.err
	}
	if len(s.cases) == 0 {
		return park("invalid_wait", fmt.Errorf("%w: step %q waits for nothing", ErrInvalidWait, s.name))
	}
	if s.rec != nil {
		return s.replay()
	}
	win, field, payload := s.first()
	if win == nil {
		susp := &sluicetype.SuspendedError{}
		for _, c := range s.cases {
			if c.signal != "" {
				susp.Signals = append(susp.Signals, c.signal)
			} else {
				susp.Timers = append(susp.Timers, c.timer)
			}
		}
		return susp
	}
	if win.decode != nil {
		if err := win.decode(payload); err != nil {
			return park("bad_signal", fmt.Errorf("step %q: signal %q: %w", s.name, win.signal, err))
		}
	}
	b, err := encodeRecord(s.idx, decided{Case: win.key, Payload: payload}, nil)
	if err != nil {
		return err
	}
	mode := store.ModeOnce
	if field != "" {
		mode = store.ModeTake(field)
	}
	if err := s.st.Commit(s.name, b, mode, "", nil); err != nil {
		return err
	}
	s.won = win
	return nil
}

// replay sets the winner a checkpoint recorded.
func (s *Selector) replay() error {
	var d decided
	if err := decode(s.rec.Result, &d); err != nil {
		return park("stale_checkpoint", fmt.Errorf("%w: step %q: %v", ErrStaleCheckpoint, s.name, err))
	}
	for _, c := range s.cases {
		if c.key == d.Case {
			if c.decode != nil {
				if err := c.decode(d.Payload); err != nil {
					return park("bad_signal", fmt.Errorf("step %q: signal %q: %w", s.name, c.signal, err))
				}
			}
			s.won = c
			return nil
		}
	}
	return park("stale_checkpoint", fmt.Errorf("%w: step %q was decided by %q, which it no longer waits for", ErrStaleCheckpoint, s.name, d.Case))
}

// first is the case that fired first as this attempt's claim saw the job:
// the earliest kept signal a case waits for, else the earliest timer due
// by the claim's store time; with a signal, its field and payload.
func (s *Selector) first() (win *Case, field string, payload []byte) {
	byName := map[string]*Case{}
	for _, c := range s.cases {
		if c.signal != "" {
			byName[c.signal] = c
		}
	}
	var seq int64 = -1
	var wake time.Time
	for f, v := range s.st.Checkpoints() {
		if n, name, ok := checkpoint.Signal(f); ok {
			if c := byName[name]; c != nil && (seq < 0 || n < seq) {
				win, field, payload, seq = c, f, v, n
			}
		}
	}
	if win != nil {
		return win, field, payload
	}
	for _, c := range s.cases {
		if c.signal != "" {
			continue
		}
		at := c.timer.At
		if b, ok := s.st.Checkpoint(checkpoint.TimerPrefix + c.timer.Name); ok {
			if _, w, ok := checkpoint.Timer(checkpoint.TimerPrefix+c.timer.Name, b); ok {
				at = w
			}
		}
		if at.IsZero() || s.st.Claimed.IsZero() || at.After(s.st.Claimed) {
			continue
		}
		if win == nil || at.Before(wake) {
			win, wake = c, at
		}
	}
	return win, "", nil
}
