package runtime

import "github.com/sluicehq/sluice/internal/keys"

// weightedPicker chooses which ready partition to claim from next so that
// jobs (not claims: a claim may take any number) are served in proportion
// to their queues' weights: with weights 6, 3 and 1 and every queue busy,
// 60%, 30% and 10% of the jobs, interleaved, the lightest never starved.
// It is weighted fair queueing on virtual time, at two levels: serving k
// jobs of a queue advances its clock by k/weight and the queue with the
// earliest clock goes next, whatever its number of partitions; within the
// queue, the same with weight 1 spreads the jobs evenly over its ready
// partitions. A queue or partition that was idle starts from the current
// virtual time, so it cannot bank credit while it had no work.
type weightedPicker struct {
	queueOf []int     // partition -> queue
	weight  []float64 // per queue
	qtime   []float64 // per queue
	ptime   []float64 // per partition
	now     float64   // virtual time of the last served queue
	qnow    []float64 // per queue: virtual time of its last served partition
}

func newWeightedPicker(parts []keys.Partition, weights map[string]int) *weightedPicker {
	p := &weightedPicker{queueOf: make([]int, len(parts)), ptime: make([]float64, len(parts))}
	index := map[string]int{}
	for i, part := range parts {
		q, ok := index[part.Queue]
		if !ok {
			q = len(p.weight)
			index[part.Queue] = q
			p.weight = append(p.weight, float64(max(weights[part.Queue], 1)))
		}
		p.queueOf[i] = q
	}
	p.qtime = make([]float64, len(p.weight))
	p.qnow = make([]float64, len(p.weight))
	return p
}

// next returns the partition to claim from among the ready ones, or -1.
func (p *weightedPicker) next(ready []bool) int {
	bestQ := -1
	for i, ok := range ready {
		q := p.queueOf[i]
		if !ok || q == bestQ {
			continue
		}
		p.qtime[q] = max(p.qtime[q], p.now)
		if bestQ < 0 || p.qtime[q] < p.qtime[bestQ] || (p.qtime[q] == p.qtime[bestQ] && p.weight[q] > p.weight[bestQ]) {
			bestQ = q
		}
	}
	best := -1
	for i, ok := range ready {
		if !ok || p.queueOf[i] != bestQ {
			continue
		}
		p.ptime[i] = max(p.ptime[i], p.qnow[bestQ])
		if best < 0 || p.ptime[i] < p.ptime[best] {
			best = i
		}
	}
	return best
}

// served records that a claim on partition i got k jobs (a claim that got
// none still counts as one, so an empty partition is not retried at once).
func (p *weightedPicker) served(i, k int) {
	q, n := p.queueOf[i], float64(max(k, 1))
	p.now = p.qtime[q]
	p.qtime[q] += n / p.weight[q]
	p.qnow[q] = p.ptime[i]
	p.ptime[i] += n
}
