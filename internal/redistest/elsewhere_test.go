package redistest

import (
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestElsewhere: the key never shares a slot with the keys it is kept
// from, including when the first candidate would (found by search).
func TestElsewhere(t *testing.T) {
	first := keys.Slot("{n:elsewhere}:x")
	var near string
	for i := 0; near == ""; i++ {
		if k := "{p" + strconv.Itoa(i) + "}"; keys.Slot(k) == first {
			near = k
		}
	}
	got := Elsewhere("n", "x", near)
	if got == "{n:elsewhere}:x" || keys.Slot(got) == first {
		t.Errorf("Elsewhere = %q (slot %d), sharing slot %d with %q", got, keys.Slot(got), first, near)
	}
	if got := Elsewhere("n", "x", "{other}"); keys.Slot("{other}") != first && got != "{n:elsewhere}:x" {
		t.Errorf("Elsewhere with no clash = %q, want the first candidate", got)
	}
}
