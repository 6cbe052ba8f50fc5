package redistest

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redisproc"
)

// Eventually polls cond every few milliseconds until it holds, and fails
// the test after 20 seconds, naming what it waited for. It is for
// observing state in Redis or in handlers that no signal reports; tests
// must not use it to wait for time to pass.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Within(tb, 20*time.Second, what, func() (bool, string) { return cond(), "" })
}

// Within is Eventually with a timeout, and a cond that also describes the
// state it saw, for the failure message.
func Within(tb testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	if ok, last := redisproc.Poll(timeout, cond); !ok {
		tb.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
	}
}
