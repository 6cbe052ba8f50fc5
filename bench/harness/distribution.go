package harness

import (
	"math"
	"slices"
	"time"
)

// Distribution summarises latencies, in milliseconds. Its JSON names are
// those of the latency scenario's report, which bench/peers reads.
type Distribution struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// Summarize computes nearest-rank percentiles, the maximum and the mean of
// ds, which it sorts; the zero Distribution for none.
func Summarize(ds []time.Duration) Distribution {
	if len(ds) == 0 {
		return Distribution{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		return ds[max(int(math.Ceil(p*float64(len(ds))))-1, 0)]
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Distribution{
		P50: Millis(rank(0.50)), P90: Millis(rank(0.90)), P99: Millis(rank(0.99)),
		Max: Millis(ds[len(ds)-1]), Mean: Millis(sum / time.Duration(len(ds))),
	}
}

// Millis converts d to fractional milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
