package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestNumbersAsMiniredisWritesThem: miniredis writes a score whose digits
// end in eight zeros or more in exponent form ('2e+12', '1.7672e+12'),
// and a small Lua number passed to a command as Go's shortest form
// ('5e-05'), which gopher-lua's own tonumber read as nil (lua/gopher.go).
// On every backend:
//   - a claim that runs dry beside a job due at 2e12 ms (2033) answers
//     the jobs it leased; it raised after writing their leases;
//   - a lease that ran out at 1767200000000 ms, reaped, leaves the job
//     readable: its orphan_expired field was '1.7672e+12', which Go
//     refused;
//   - a rate class of one job per 100 s, burst 1, admits one job in the
//     first 6 ms; miniredis's bucket refilled at once, read as unset.
func TestNumbersAsMiniredisWritesThem(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/next due at a round time", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "later", RunAt: time.UnixMilli(2e12 + 1234)}, store.NewJob{Local: "x"})
			res := f.claim(10, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "x" || !res.Scheduled {
				t.Fatalf("claim: %d jobs, scheduled %v; want x, and later scheduled", len(res.Jobs), res.Scheduled)
			}
		})
		t.Run(b.name+"/a lease that ran out at a round time", func(t *testing.T) {
			f := newFixture(t, b)
			f.clk.now = time.UnixMilli(1767200000000 - 30000)
			f.enqueue(store.NewJob{Local: "a"})
			f.claim(1, "w")
			f.clk.Advance(31 * time.Second)
			if _, err := f.st.Maintain(f.ctx, f.p, 10, 0, 0); err != nil {
				t.Fatal(err)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Job("a"), keys.FieldOrphanExpired).Val(); v != "1767200000000" {
				t.Fatalf("orphan_expired %q, want the lease's end in ms", v)
			}
			if j, _, err := f.st.Get(f.ctx, f.ref("a")); err != nil || j.State != "retryable" {
				t.Fatalf("get: %+v %v", j, err)
			}
		})
		t.Run(b.name+"/a rate of one job per 100 s", func(t *testing.T) {
			f := newFixture(t, b)
			lim := store.Limits{RateClass: "r", RateJobs: 1, RatePer: 100 * time.Second, RateBurst: 1}
			var got []string
			for _, id := range []string{"a", "b", "c", "d"} {
				f.enqueue(store.NewJob{Local: id, Limits: lim})
				for _, j := range f.claim(10, "w").Jobs {
					got = append(got, j.Local)
				}
				f.clk.Advance(2 * time.Millisecond)
			}
			if len(got) != 1 {
				t.Fatalf("leased %s in 6 ms, want one job (tokens stored %q)", strings.Join(got, " "),
					f.rdb.HGet(f.ctx, f.p.RateBucket("r"), "t").Val())
			}
		})
	}
}
