package runtime

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff returns how long to wait before the retry that follows the
// attempt-th returned error (attempt starts at 1).
type Backoff func(attempt int) time.Duration

// ExponentialBackoff doubles from base up to max and spreads each delay by
// ±jitter (a fraction, e.g. 0.2). A delay is never negative and never
// above max: one spread above max is max. A jitter below 0 (or NaN) is
// taken as 0, one of 1 or more (+Inf too) as just under 1; a base or max
// below 0 as 0.
func ExponentialBackoff(base, max time.Duration, jitter float64) Backoff {
	base, max = clampDelay(base), clampDelay(max)
	switch {
	case !(jitter > 0): // also NaN
		jitter = 0
	case jitter >= 1:
		jitter = math.Nextafter(1, 0)
	}
	return func(attempt int) time.Duration {
		d := min(base, max)
		// stop doubling before it could pass max, or overflow; a zero
		// base stays zero however many attempts
		for i := 1; i < attempt && 0 < d && d < max; i++ {
			if d > max/2 {
				d = max
				break
			}
			d *= 2
		}
		if jitter > 0 {
			f := float64(d) * (1 + jitter*(2*rand.Float64()-1))
			// compared as floats: a float64 of max or above may not fit a Duration
			if f >= float64(max) {
				return max
			}
			d = time.Duration(f)
		}
		return clampDelay(d)
	}
}

// clampDelay is d, or 0 for a negative d.
func clampDelay(d time.Duration) time.Duration { return max(d, 0) }

// DefaultBackoff: 1s, 2s, 4s, ... capped at one hour, ±20% (at the cap,
// -20% only).
var DefaultBackoff = ExponentialBackoff(time.Second, time.Hour, 0.2)
