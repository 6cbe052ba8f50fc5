package store

import "testing"

// TestCallCut: a call takes items up to max, and up to maxCallBytes of
// them, but always the first.
func TestCallCut(t *testing.T) {
	const M = maxCallBytes
	cases := []struct {
		sizes []int
		max   int
		want  int
	}{
		{[]int{1, 1, 1}, 10, 3},
		{[]int{1, 1, 1}, 2, 2},
		{[]int{M / 2, M / 2, 1}, 10, 2},
		{[]int{M / 2, M/2 - 1, 1}, 10, 3},
		{[]int{M + 1, 1}, 10, 1},
		{[]int{1, M}, 10, 1},
		{nil, 10, 0},
	}
	for _, c := range cases {
		got := callCut(len(c.sizes), c.max, func(i int) int { return c.sizes[i] })
		if got != c.want {
			t.Errorf("callCut(%v, max %d) = %d, want %d", c.sizes, c.max, got, c.want)
		}
	}
}
