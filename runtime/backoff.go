package runtime

import (
	"math/rand/v2"
	"time"
)

// Backoff returns how long to wait before the retry that follows the
// attempt-th returned error (attempt starts at 1).
type Backoff func(attempt int) time.Duration

// ExponentialBackoff doubles from base up to max and spreads each delay by
// ±jitter (a fraction, e.g. 0.2).
func ExponentialBackoff(base, max time.Duration, jitter float64) Backoff {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		if jitter > 0 {
			f := 1 + jitter*(2*rand.Float64()-1)
			d = time.Duration(float64(d) * f)
		}
		return d
	}
}

// DefaultBackoff: 1s, 2s, 4s, ... capped at one hour, ±20%.
var DefaultBackoff = ExponentialBackoff(time.Second, time.Hour, 0.2)
