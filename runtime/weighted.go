package runtime

import "github.com/sluicehq/sluice/internal/keys"

// weightedPicker chooses which ready partition to claim from next so that
// jobs (not claims: a claim may take any number) are served in proportion
// to their queues' weights: with weights 6, 3 and 1 and every queue busy,
// 60%, 30% and 10% of the jobs, interleaved, the lightest never starved.
// It is weighted fair queueing on virtual time: serving k jobs of a
// partition advances its clock by k/weight, and the partition with the
// earliest clock goes next. A partition that was idle starts from the
// current virtual time, so it cannot bank credit while it had no work.
type weightedPicker struct {
	weight []float64
	vtime  []float64
	now    float64 // virtual time of the last served partition
}

func newWeightedPicker(parts []keys.Partition, weights map[string]int) *weightedPicker {
	p := &weightedPicker{weight: make([]float64, len(parts)), vtime: make([]float64, len(parts))}
	for i, part := range parts {
		p.weight[i] = float64(max(weights[part.Queue], 1))
	}
	return p
}

// next returns the partition to claim from among the ready ones, or -1.
func (p *weightedPicker) next(ready []bool) int {
	best := -1
	for i, ok := range ready {
		if !ok {
			continue
		}
		p.vtime[i] = max(p.vtime[i], p.now)
		if best < 0 || p.vtime[i] < p.vtime[best] || (p.vtime[i] == p.vtime[best] && p.weight[i] > p.weight[best]) {
			best = i
		}
	}
	return best
}

// served records that a claim on partition i got k jobs (a claim that got
// none still counts as one, so an empty partition is not retried at once).
func (p *weightedPicker) served(i, k int) {
	p.now = p.vtime[i]
	p.vtime[i] += float64(max(k, 1)) / p.weight[i]
}
