package redistest

import (
	"testing"
	"time"
)

// Eventually polls cond every few milliseconds until it holds, and fails
// the test after 20 seconds, naming what it waited for. It is for
// observing state in Redis or in handlers that no signal reports; tests
// must not use it to wait for time to pass.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
