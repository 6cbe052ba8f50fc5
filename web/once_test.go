package web

import (
	"errors"
	"testing"
)

// TestOnceRuns: a second call with a key while the first runs waits for
// it and answers what it said, without running; a failed run is not
// kept, so a retry runs again; another key runs apart.
func TestOnceRuns(t *testing.T) {
	t.Parallel()
	var o onceRuns
	started, release := make(chan struct{}), make(chan struct{})
	runs := 0
	first := make(chan string, 1)
	go func() {
		msg, _, _, _ := o.do("k", func() (string, string, error) {
			runs++
			close(started)
			<-release
			return "deleted 2", "/q", nil
		})
		first <- msg
	}()
	<-started
	second := make(chan string, 1)
	go func() {
		msg, back, again, err := o.do("k", func() (string, string, error) {
			t.Error("the second call ran")
			return "", "", nil
		})
		if !again || back != "/q" || err != nil {
			t.Errorf("second call: again %v, back %q, %v", again, back, err)
		}
		second <- msg
	}()
	close(release)
	if a, b := <-first, <-second; a != "deleted 2" || b != "deleted 2" || runs != 1 {
		t.Fatalf("first %q, second %q, %d runs; want both deleted 2, one run", a, b, runs)
	}
	failed := errors.New("redis down")
	if _, _, again, err := o.do("f", func() (string, string, error) { return "", "", failed }); again || !errors.Is(err, failed) {
		t.Fatalf("a failing run: again %v, %v", again, err)
	}
	if msg, _, again, err := o.do("f", func() (string, string, error) { return "deleted 1", "/q", nil }); again || err != nil || msg != "deleted 1" {
		t.Fatalf("the retry after a failure: %q, again %v, %v; want it run", msg, again, err)
	}
}

// TestOncePanicNotKept: a run that panics (net/http recovers a handler's
// panic) is not kept: the same confirmation posted again runs. A review
// found its key kept as a success, answering "done already" with no
// message, for an hour.
func TestOncePanicNotKept(t *testing.T) {
	t.Parallel()
	var o onceRuns
	func() {
		defer func() { _ = recover() }()
		o.do("k", func() (string, string, error) { panic("boom") })
	}()
	ran := false
	msg, _, again, err := o.do("k", func() (string, string, error) {
		ran = true
		return "deleted 2", "/queues/q", nil
	})
	if !ran || again || err != nil || msg != "deleted 2" {
		t.Fatalf("after a run that panicked: ran %v, %q, again %v, %v; want it run", ran, msg, again, err)
	}
}
