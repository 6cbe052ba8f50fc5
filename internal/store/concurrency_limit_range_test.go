package store_test

import (
	"math"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestConcurrencyLimitBeyondLuaIntegersIsNoLimitOfOne: a concurrency limit
// too large for the scripts' integers (2^53 and up: math.MaxInt, which a
// caller may pass for "no limit worth counting") still lets every job of
// the key run at once. The scripts read such a field as corrupt data and
// take it as a limit of 1: the key's jobs ran one at a time.
func TestConcurrencyLimitBeyondLuaIntegersIsNoLimitOfOne(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			for _, big := range []int64{1 << 53, math.MaxInt64} {
				if big > math.MaxInt {
					continue // a 32-bit int takes no such limit
				}
				limit := int(big)
				key := "tenant-" + string(rune('a'+limit%7))
				lim := store.Limits{ConcurrencyKey: key, ConcurrencyLimit: limit}
				f.enqueue(store.NewJob{Local: key + "-1", Limits: lim}, store.NewJob{Local: key + "-2", Limits: lim},
					store.NewJob{Local: key + "-3", Limits: lim})
				got := locals(f.claim(10, "w").Jobs)
				if len(got) != 3 {
					t.Fatalf("limit %d: claimed %v, want all 3 jobs of the key", limit, got)
				}
			}
		})
	}
}
