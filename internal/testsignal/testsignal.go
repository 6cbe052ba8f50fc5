// Package testsignal lets a component tell its tests what it just did,
// at no cost when no test listens: River's testsignal idea, on channels.
//
// A Signal's zero value is off: Signal is a nil check, allocates nothing
// and takes no lock, so components call it on their hot paths and
// production code never turns one on. A test turns on the signals it
// wants (Init, or NewWorker for a worker's set), hands them to the
// component through an internal path (for a worker, the context of Run:
// WithWorker) and waits on them: Wait returns the next value, WaitFor
// the next one a predicate accepts, and both fail the test after Timeout
// instead of hanging.
//
// Signal never blocks, even when a test has turned it on but waits on it
// rarely or never: values wait in a bounded buffer (Size), and when it is
// full the oldest value is dropped to make room for the newest. A signal
// says that something has happened; a test that waits after acting wants
// the latest news, and one that let a busy component fill the buffer had
// not looked at the old values anyway. Drops are counted, and a wait that
// times out names them, so a test that needed a dropped value fails
// saying why.
//
// A signal's own buffer has one consumer: a value taken by one waiter
// (also one that WaitFor skipped) is gone for the others. A waiter that
// must not take values from others (a helper that tests may call from
// parallel subtests) subscribes instead: Subscribe gives it a buffer of
// its own that gets every value signalled from then on. Subscribing,
// then checking the state, then waiting misses nothing: a change before
// the check is seen by the check, one after it is signalled.
//
// The package imports neither testing nor any test helper: the runtime
// it is linked into ships in production binaries. Waits take a TB, the
// part of testing.TB they use.
package testsignal

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Timeout bounds every wait that is not given its own: generous, because
// CI machines are slow and shared (-race on two cores).
const Timeout = 20 * time.Second

// Size is the buffer of a signal that Init makes, and of a subscription.
const Size = 1024

// TB is the part of testing.TB that a wait uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal carries values of type T from a component to a test. The zero
// value is off: Signal does nothing and the waits fail. A Signal may be
// copied (a copy shares the original's buffers), so a component can keep
// a set of them by value.
type Signal[T any] struct {
	b *buffer[T]
}

// buffer is an initialised signal: its own queue, and its subscribers'.
type buffer[T any] struct {
	*queue[T]
	mu   sync.Mutex
	subs map[*queue[T]]bool
}

// Init turns s on with a buffer of Size; name says in failure messages
// which signal timed out.
func (s *Signal[T]) Init(name string) { s.InitSize(name, Size) }

// InitSize turns s on with a buffer of n values (at least 1).
func (s *Signal[T]) InitSize(name string, n int) {
	s.b = &buffer[T]{queue: newQueue[T](name, n), subs: map[*queue[T]]bool{}}
}

// Enabled reports whether s is on: a component that must compute a
// value only for the signal (allocate, read the clock) asks first.
func (s *Signal[T]) Enabled() bool { return s.b != nil }

// Signal records v if s is on, without blocking: in s's buffer and in
// every subscription's, each dropping its oldest value when full (see the
// package comment).
func (s *Signal[T]) Signal(v T) {
	if s.b != nil {
		s.b.signal(v)
	}
}

//go:noinline // keeps the callers small: it runs only in tests
func (b *buffer[T]) signal(v T) {
	b.mu.Lock()
	for q := range b.subs {
		q.put(v)
	}
	b.mu.Unlock()
	b.put(v)
}

// Subscribe returns a subscription to s: a buffer of its own (Size) that
// gets every value signalled from now on, until Close. It panics if s is
// off: only a test subscribes, to a signal it turned on.
func (s *Signal[T]) Subscribe() *Sub[T] {
	if s.b == nil {
		panic("testsignal: subscribing to a signal that is off")
	}
	q := newQueue[T](s.b.name, Size)
	s.b.mu.Lock()
	s.b.subs[q] = true
	s.b.mu.Unlock()
	return &Sub[T]{queue: q, b: s.b}
}

// Wait returns the next value, failing the test after Timeout.
func (s *Signal[T]) Wait(tb TB) T {
	tb.Helper()
	if s.b == nil {
		return s.off(tb)
	}
	return s.b.WaitWithin(tb, Timeout, nil)
}

// WaitFor returns the next value that match accepts (nil accepts any),
// discarding the values before it, and fails the test after Timeout.
func (s *Signal[T]) WaitFor(tb TB, match func(T) bool) T {
	tb.Helper()
	if s.b == nil {
		return s.off(tb)
	}
	return s.b.WaitWithin(tb, Timeout, match)
}

// WaitWithin is WaitFor with its own timeout.
func (s *Signal[T]) WaitWithin(tb TB, timeout time.Duration, match func(T) bool) T {
	tb.Helper()
	if s.b == nil {
		return s.off(tb)
	}
	return s.b.WaitWithin(tb, timeout, match)
}

// Await is WaitWithin that reports a timeout (ok false) instead of
// failing the test, for a caller that has more to say about it. It
// returns at once, not ok, when s is off.
func (s *Signal[T]) Await(timeout time.Duration, match func(T) bool) (v T, ok bool) {
	if s.b == nil {
		return v, false
	}
	return s.b.Await(timeout, match)
}

// Drain discards the values waiting in s's buffer and returns them,
// oldest first: a test drains a signal before it acts when a value from
// before would satisfy its next wait. Nil when s is off.
func (s *Signal[T]) Drain() []T {
	if s.b == nil {
		return nil
	}
	return s.b.Drain()
}

// C is the channel of s's buffer, for a select that also waits on
// something else. Nil (never ready) when s is off.
func (s *Signal[T]) C() <-chan T {
	if s.b == nil {
		return nil
	}
	return s.b.ch
}

// Dropped is how many values s's buffer dropped when full.
func (s *Signal[T]) Dropped() int64 {
	if s.b == nil {
		return 0
	}
	return s.b.dropped.Load()
}

// off fails the wait of a signal that is off.
func (s *Signal[T]) off(tb TB) (zero T) {
	tb.Helper()
	tb.Fatalf("testsignal: waiting on a signal that is off (not initialised)")
	return zero
}

// Sub is a subscription to a Signal (Subscribe). Its waits are the
// Signal's, on its own buffer.
type Sub[T any] struct {
	*queue[T]
	b *buffer[T]
}

// Close ends the subscription: the signal stops filling its buffer.
func (s *Sub[T]) Close() {
	s.b.mu.Lock()
	delete(s.b.subs, s.queue)
	s.b.mu.Unlock()
}

// queue is a bounded buffer of values and the waits on it.
type queue[T any] struct {
	name    string
	ch      chan T
	dropped atomic.Int64
}

func newQueue[T any](name string, n int) *queue[T] {
	return &queue[T]{name: name, ch: make(chan T, max(n, 1))}
}

// put adds v, dropping the oldest value when the buffer is full.
func (q *queue[T]) put(v T) {
	select {
	case q.ch <- v:
		return
	default:
	}
	select { // full: drop the oldest
	case <-q.ch:
		q.dropped.Add(1)
	default:
	}
	select {
	case q.ch <- v:
	default: // other senders filled the room first: drop v instead
		q.dropped.Add(1)
	}
}

// Wait returns the next value, failing the test after Timeout.
func (q *queue[T]) Wait(tb TB) T {
	tb.Helper()
	return q.WaitWithin(tb, Timeout, nil)
}

// WaitFor returns the next value that match accepts (nil accepts any),
// discarding the values before it, and fails the test after Timeout.
func (q *queue[T]) WaitFor(tb TB, match func(T) bool) T {
	tb.Helper()
	return q.WaitWithin(tb, Timeout, match)
}

// WaitWithin is WaitFor with its own timeout.
func (q *queue[T]) WaitWithin(tb TB, timeout time.Duration, match func(T) bool) T {
	tb.Helper()
	v, ok, skipped, last := q.await(timeout, match)
	if !ok {
		msg := fmt.Sprintf("testsignal: no %s signal", q.name)
		if match != nil {
			msg += " matched"
		}
		msg += fmt.Sprintf(" within %s", timeout)
		if skipped > 0 {
			msg += fmt.Sprintf("; skipped %d, the last %+v", skipped, last)
		}
		if n := q.dropped.Load(); n > 0 {
			msg += fmt.Sprintf("; %d dropped on a full buffer", n)
		}
		tb.Fatalf("%s", msg)
	}
	return v
}

// Await is WaitWithin that reports a timeout (ok false) instead of
// failing the test.
func (q *queue[T]) Await(timeout time.Duration, match func(T) bool) (v T, ok bool) {
	v, ok, _, _ = q.await(timeout, match)
	return v, ok
}

func (q *queue[T]) await(timeout time.Duration, match func(T) bool) (v T, ok bool, skipped int, last T) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case v = <-q.ch:
			if match == nil || match(v) {
				return v, true, skipped, last
			}
			skipped, last = skipped+1, v
		case <-t.C:
			var zero T
			return zero, false, skipped, last
		}
	}
}

// Drain discards the values waiting and returns them, oldest first.
func (q *queue[T]) Drain() []T {
	var out []T
	for {
		select {
		case v := <-q.ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// C is the channel values arrive on.
func (q *queue[T]) C() <-chan T { return q.ch }

// Dropped is how many values were dropped on a full buffer.
func (q *queue[T]) Dropped() int64 { return q.dropped.Load() }
