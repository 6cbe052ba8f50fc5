package runtime

import (
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

func TestWeightedPicker(t *testing.T) {
	parts := []keys.Partition{{Queue: "critical"}, {Queue: "default"}, {Queue: "low"}}
	p := newWeightedPicker(parts, map[string]int{"critical": 6, "default": 3, "low": 1})
	all := []bool{true, true, true}
	counts := make([]int, 3)
	for range 1000 {
		counts[p.next(all)]++
	}
	if counts[0] != 600 || counts[1] != 300 || counts[2] != 100 {
		t.Fatalf("served %v, want 600/300/100", counts)
	}
	// With the busiest queue dry, the others share in their own ratio.
	counts = make([]int, 3)
	for range 400 {
		counts[p.next([]bool{false, true, true})]++
	}
	if counts[0] != 0 || counts[1] != 300 || counts[2] != 100 {
		t.Fatalf("served %v, want 0/300/100", counts)
	}
	if got := p.next([]bool{false, false, false}); got != -1 {
		t.Fatalf("nothing ready: %d", got)
	}
}
