package step

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestTimeoutTimer: WaitSignal's timeout timer keeps the name every
// release gave it (name+".timeout") while that fits, and for a longer
// step name is a valid wait name of its own, one per name.
func TestTimeoutTimer(t *testing.T) {
	for n := 1; n <= 92; n++ {
		name := strings.Repeat("a", n)
		if got := timeoutTimer(name); got != name+".timeout" {
			t.Fatalf("timeoutTimer(%d bytes) = %q, want name.timeout", n, got)
		}
	}
	seen := map[string]string{}
	for n := 93; n <= 100; n++ {
		for _, last := range []string{"a", "b"} {
			name := strings.Repeat("w", n-1) + last
			got := timeoutTimer(name)
			if !store.ValidWaitName(got) || !strings.HasSuffix(got, ".timeout") {
				t.Fatalf("timeoutTimer(%d bytes) = %q (%d bytes): not a valid wait name", n, got, len(got))
			}
			if other, dup := seen[got]; dup {
				t.Fatalf("timeoutTimer(%q) = timeoutTimer(%q) = %q", name, other, got)
			}
			seen[got] = name
		}
	}
}
