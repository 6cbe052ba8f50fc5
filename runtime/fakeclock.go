package runtime

import (
	"sort"
	"sync"
	"time"
)

// FakeClock is a Clock that moves only when Advance is called, for tests:
// give the same one to the workers (Options.Clock) and the client
// (flow.ClientOptions.Clock) of a test, arm what it waits for, then
// Advance past a backoff or a lease instead of sleeping through it.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	waiters []chan struct{}
}

// NewFakeClock returns a FakeClock reading start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now is the fake time.
func (f *FakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer makes a timer that fires when the fake time passes now+d.
func (f *FakeClock) NewTimer(d time.Duration) Timer {
	return f.add(d, nil)
}

// AfterFunc calls fn in a goroutine when the fake time passes now+d.
func (f *FakeClock) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn)
}

func (f *FakeClock) add(d time.Duration, fn func()) *fakeTimer {
	f.mu.Lock()
	t := &fakeTimer{f: f, at: f.now.Add(d), fn: fn, c: make(chan time.Time, 1)}
	if d <= 0 {
		f.mu.Unlock()
		t.fire(t.at)
		return t
	}
	f.timers = append(f.timers, t)
	for _, w := range f.waiters {
		close(w)
	}
	f.waiters = nil
	f.mu.Unlock()
	return t
}

// Advance moves the time forward by d and fires every timer now due, in
// order of their due times.
func (f *FakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	var due, rest []*fakeTimer
	for _, t := range f.timers {
		if !t.at.After(now) {
			due = append(due, t)
		} else {
			rest = append(rest, t)
		}
	}
	f.timers = rest
	f.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.fire(now)
	}
}

// Pending is the number of timers not yet fired or stopped.
func (f *FakeClock) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers blocks until at least n timers are pending: a test calls it
// to know the code under test has armed its timers before advancing.
func (f *FakeClock) WaitTimers(n int) {
	for {
		f.mu.Lock()
		if len(f.timers) >= n {
			f.mu.Unlock()
			return
		}
		w := make(chan struct{})
		f.waiters = append(f.waiters, w)
		f.mu.Unlock()
		<-w
	}
}

type fakeTimer struct {
	f  *FakeClock
	at time.Time
	fn func()
	c  chan time.Time
}

func (t *fakeTimer) fire(now time.Time) {
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.c <- now:
	default:
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for i, x := range t.f.timers {
		if x == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			return true
		}
	}
	return false
}
