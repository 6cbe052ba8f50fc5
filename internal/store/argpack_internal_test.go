package store

import "testing"

// TestCallCut: a call takes items up to max, and up to maxCallBytes of
// them, but always the first; it says how many bytes those are.
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
		got, bytes := callCut(len(c.sizes), c.max, func(i int) int { return c.sizes[i] })
		want := 0
		for _, s := range c.sizes[:c.want] {
			want += s
		}
		if got != c.want || bytes != want {
			t.Errorf("callCut(%v, max %d) = %d, %d bytes; want %d, %d bytes", c.sizes, c.max, got, bytes, c.want, want)
		}
	}
}

// TestNewJobSizeCountsEveryString: a job's size, by which a batch is cut
// into calls, counts each string the call sends, keys and names too:
// a megabyte in any of them is a megabyte of the call.
func TestNewJobSizeCountsEveryString(t *testing.T) {
	base := (&NewJob{Local: "a", Kind: "k"}).size()
	big := string(make([]byte, 1<<20))
	for name, j := range map[string]NewJob{
		"unique key":      {Unique: Unique{Key: big}},
		"concurrency key": {Limits: Limits{ConcurrencyKey: big}},
		"rate class":      {Limits: Limits{RateClass: big}},
		"sticky worker":   {Sticky: Sticky{Worker: big}},
		"parent step":     {Parent: &ParentRef{Step: big}},
		"hold":            {Hold: big},
		"payload":         {Payload: []byte(big)},
	} {
		j.Local, j.Kind = "a", "k"
		if got := j.size(); got < base+1<<20 {
			t.Errorf("%s of a megabyte: size %d, want at least %d", name, got, base+1<<20)
		}
	}
}
