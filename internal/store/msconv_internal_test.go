package store

import (
	"math"
	"math/big"
	"testing"
	"time"
)

// TestDurationsToMSKeepTheirSize: every Duration a caller can give (a
// unique TTL, a rate period, a lease, a delay) turns into the ms the
// scripts take without overflowing: same sign, rounded as documented (ms
// down with under 1 ms as 1, msUp up), never more than 1 ms off. msUp
// once added 1ms-1 first, which wrapped for the largest Durations (a
// natural "for ever") and made a TTL negative: none at all.
func TestDurationsToMSKeepTheirSize(t *testing.T) {
	ds := []time.Duration{0, 1, time.Millisecond - 1, time.Millisecond, time.Millisecond + 1, time.Hour,
		math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - time.Millisecond + 1, math.MaxInt64 - time.Millisecond,
		-1, -time.Millisecond, math.MinInt64, math.MinInt64 + 1}
	million := big.NewInt(int64(time.Millisecond))
	for _, d := range ds {
		exact := new(big.Int).SetInt64(int64(d))
		for name, got := range map[string]int64{"ms": ms(d), "msUp": msUp(d)} {
			if (got > 0) != (d > 0) || (got < 0) != (d <= -time.Millisecond) {
				t.Errorf("%s(%d) = %d: the sign changed", name, d, got)
			}
			// |got*1e6 - d| < 1 ms
			diff := new(big.Int).Sub(new(big.Int).Mul(big.NewInt(got), million), exact)
			if diff.CmpAbs(million) >= 0 {
				t.Errorf("%s(%d) = %d ms: more than 1 ms off", name, d, got)
			}
			if name == "msUp" && d > 0 && diff.Sign() < 0 {
				t.Errorf("msUp(%d) = %d ms: shorter than asked", d, got)
			}
		}
	}
}
