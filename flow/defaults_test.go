package flow

import (
	"slices"
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

// TestDefaultPort: an address without a port gets the one given, IPv6
// literals included; one with a port, or one Connect would refuse, is
// left as it is.
func TestDefaultPort(t *testing.T) {
	got := defaultPort([]string{"s1", "s2:1", "[::1]", "[::1]:2", "h:"}, "26379")
	want := []string{"s1:26379", "s2:1", "[::1]:26379", "[::1]:2", "h:"}
	if !slices.Equal(got, want) {
		t.Fatalf("defaultPort = %v, want %v", got, want)
	}
}
