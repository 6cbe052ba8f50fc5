package web

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestSecondFollowerGetsJob: a stream that starts following a job another
// stream follows already gets the job's state at the next publish,
// although it has not changed since the first one got it; the first one
// is not sent it again. A helper's audit found the changes were worked
// out once for all followers, so the second tab got nothing until the
// job changed, and went on showing the state its page was rendered with.
func TestSecondFollowerGetsJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{}, false)
	id := f.enqueue(flaky{})
	h := newHub(adminOps{Client: f.ops}, time.Hour, func(err error) { t.Error(err) })
	first := h.subscribe(id)
	t.Cleanup(func() { h.unsubscribe(first) })
	jobEvent := func(s *subscriber, within time.Duration) bool {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case ev := <-s.ch:
				if ev.name == "job" {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !jobEvent(first, testkit.Timeout) { // the poller's first publish
		t.Fatal("the first follower got no job event")
	}
	second := h.subscribe(id)
	t.Cleanup(func() { h.unsubscribe(second) })
	h.publish(context.Background())
	if !jobEvent(second, time.Second) {
		t.Error("the second follower got no job event: it was owed the job's state")
	}
	if jobEvent(first, 100*time.Millisecond) {
		t.Error("the first follower was sent the job again, unchanged")
	}
}
