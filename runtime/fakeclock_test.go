package runtime

import (
	"testing"
	"time"
)

// TestFakeTimers: Pending counts armed timers, WaitTimers returns once
// enough are armed (from another goroutine), and Advance fires the due
// ones in order of their due times.
func TestFakeTimers(t *testing.T) {
	f := NewFakeClock(time.Unix(0, 0))
	armed := make(chan struct{})
	go func() {
		f.WaitTimers(2)
		close(armed)
	}()
	late := f.NewTimer(2 * time.Second)
	select {
	case <-armed:
		t.Fatal("WaitTimers(2) returned with one timer armed")
	case <-time.After(20 * time.Millisecond):
	}
	fired := make(chan string, 2)
	f.AfterFunc(time.Second, func() { fired <- "early" })
	<-armed
	if n := f.Pending(); n != 2 {
		t.Fatalf("Pending = %d, want 2", n)
	}
	f.Advance(time.Second)
	if got := <-fired; got != "early" || f.Pending() != 1 {
		t.Fatalf("after 1s: fired %q, %d pending; want early, 1", got, f.Pending())
	}
	f.Advance(time.Second)
	select {
	case at := <-late.C():
		if !at.Equal(time.Unix(2, 0)) {
			t.Errorf("late timer fired at %v, want 2s", at)
		}
	default:
		t.Fatal("the 2s timer did not fire at 2s")
	}
	if n := f.Pending(); n != 0 {
		t.Errorf("Pending = %d after every timer fired, want 0", n)
	}
}
