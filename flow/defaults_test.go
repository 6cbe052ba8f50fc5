package flow

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDefaultMaxAttemptsAgrees: the default users read here is the one the
// store (and the scripts, which leave it out of a job's hash) assume.
func TestDefaultMaxAttemptsAgrees(t *testing.T) {
	if DefaultMaxAttempts != store.DefaultMaxAttempts {
		t.Fatalf("flow.DefaultMaxAttempts %d, store's %d", DefaultMaxAttempts, store.DefaultMaxAttempts)
	}
}
