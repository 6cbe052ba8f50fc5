package runtime

import "github.com/sluicehq/sluice/internal/keys"

// weightedPicker chooses which ready partition to claim from next, by
// smooth weighted round-robin over the queues' weights: with weights 6, 3
// and 1 and every queue busy, claims go 6:3:1 and interleave, and a queue
// of weight 1 is never starved. Every partition of a queue has the queue's
// weight.
type weightedPicker struct {
	weight  []int
	current []int
}

func newWeightedPicker(parts []keys.Partition, weights map[string]int) *weightedPicker {
	p := &weightedPicker{weight: make([]int, len(parts)), current: make([]int, len(parts))}
	for i, part := range parts {
		p.weight[i] = max(weights[part.Queue], 1)
	}
	return p
}

// next returns the partition to claim from among the ready ones, or -1.
func (p *weightedPicker) next(ready []bool) int {
	best, total := -1, 0
	for i, ok := range ready {
		if !ok {
			continue
		}
		p.current[i] += p.weight[i]
		total += p.weight[i]
		if best < 0 || p.current[i] > p.current[best] {
			best = i
		}
	}
	if best >= 0 {
		p.current[best] -= total
	}
	return best
}
