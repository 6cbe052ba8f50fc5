package runtime

import (
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
)

func TestWeightedPicker(t *testing.T) {
	parts := []keys.Partition{{Queue: "critical"}, {Queue: "default"}, {Queue: "low"}}
	p := newWeightedPicker(parts, map[string]int{"critical": 6, "default": 3, "low": 1})
	serve := func(ready []bool, claims, size int) []int {
		counts := make([]int, 3)
		for n := 0; n < claims; n++ {
			i := p.next(ready)
			k := size
			if size == 0 {
				k = 1 + n%5 // claims of varying size
			}
			counts[i] += k
			p.served(i, k)
		}
		return counts
	}
	within := func(got, want int) bool { return got*100 >= want*98 && got*100 <= want*102 }
	c := serve([]bool{true, true, true}, 3000, 0)
	total := c[0] + c[1] + c[2]
	if !within(c[0], total*6/10) || !within(c[1], total*3/10) || !within(c[2], total/10) {
		t.Fatalf("served jobs %v, want 60/30/10%% of %d", c, total)
	}
	// An idle queue banks no credit: after a pause it gets its share, not a burst.
	serve([]bool{true, true, false}, 1000, 1)
	c = serve([]bool{true, true, true}, 1000, 1)
	if !within(c[2], 100) {
		t.Fatalf("after idling, the light queue served %d of 1000, want 100", c[2])
	}
	if got := p.next([]bool{false, false, false}); got != -1 {
		t.Fatalf("nothing ready: %d", got)
	}
}

// TestWeightedPickerPartitions: a queue's share does not grow with its
// partitions, and within a queue the jobs spread evenly over the ready
// partitions.
func TestWeightedPickerPartitions(t *testing.T) {
	var parts []keys.Partition
	for i := range 12 {
		parts = append(parts, keys.Partition{Queue: "wide", Index: i})
	}
	parts = append(parts, keys.Partition{Queue: "narrow"})
	p := newWeightedPicker(parts, map[string]int{"wide": 1, "narrow": 1})
	ready := make([]bool, len(parts))
	for i := range ready {
		ready[i] = i%2 == 0 || i == 12 // six wide partitions and the narrow one
	}
	counts := make([]int, len(parts))
	for n := range 2400 {
		i := p.next(ready)
		k := 1 + n%3
		counts[i] += k
		p.served(i, k)
	}
	wide, total := 0, 0
	for i, c := range counts {
		total += c
		if i < 12 {
			wide += c
		}
		if !ready[i] && c != 0 {
			t.Fatalf("partition %d was not ready but served %d", i, c)
		}
	}
	if wide*100 < total*48 || wide*100 > total*52 {
		t.Fatalf("wide queue served %d of %d jobs, want half: %v", wide, total, counts)
	}
	for i := 0; i < 12; i += 2 {
		if counts[i]*100 < wide/6*95 || counts[i]*100 > wide/6*105 {
			t.Fatalf("wide partition %d served %d of %d, want a sixth: %v", i, counts[i], wide, counts)
		}
	}
}
