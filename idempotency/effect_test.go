package idempotency

import (
	"slices"
	"testing"
	"time"
)

// TestTTLRoundsUp: a TTL under a whole millisecond rounds up, never down
// to 0 (which would mean no TTL, or delete at once).
func TestTTLRoundsUp(t *testing.T) {
	if got := Set("k", "v", 500*time.Microsecond).Args; !slices.Equal(got, []string{"v", "PX", "1"}) {
		t.Errorf("Set 500µs: %v", got)
	}
	if got := Set("k", "v", 1500*time.Microsecond).Args; !slices.Equal(got, []string{"v", "PX", "2"}) {
		t.Errorf("Set 1.5ms: %v", got)
	}
	if got := Expire("k", time.Microsecond).Args; !slices.Equal(got, []string{"1"}) {
		t.Errorf("Expire 1µs: %v", got)
	}
	if got := Set("k", "v", 0).Args; !slices.Equal(got, []string{"v"}) {
		t.Errorf("Set without TTL: %v", got)
	}
}
