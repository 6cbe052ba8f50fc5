package store_test

import (
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimRateBucketKeep: a claim of a rate class writes its token
// bucket back at flush() with a PEXPIRE of twice its time to refill. For
// the rate limit of TestEnqueueHugeRateLimit (a burst of 1e8 per
// 1,000 h), whose enqueue clamped that time, the claim's own PEXPIRE was
// neither clamped nor written as an integer: Lua handed PEXPIRE
// '7.2e+17', which Redis refused at the end of the claim, after the
// leases were written and indexed; the worker got an error and not its
// jobs, which ran under leases nobody held until the reaper charged each
// a crash, and every claim that met the class did it again. A stored
// bucket whose jobs per period is 0 (corrupt data) made it 'inf'; one
// whose parameters are no positive finite number is now no bucket. Each
// claim leases both jobs.
func TestClaimRateBucketKeep(t *testing.T) {
	t.Parallel()
	huge := store.Limits{RateClass: "r", RateJobs: 1, RatePer: 1000 * time.Hour, RateBurst: 100_000_000}
	plain := store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Second, RateBurst: 5}
	cases := []struct {
		name  string
		lim   store.Limits
		field string // a parameter of the stored bucket, set to value
		value string
	}{
		{"huge limit", huge, "", ""},
		{"stored jobs per period 0", plain, "n", "0"},
		{"stored period nan", plain, "p", "nan"},
		{"stored burst inf", plain, "b", "inf"},
		{"stored tokens -inf", plain, "t", "-inf"},
	}
	for _, b := range backends(t) {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b", Limits: tc.lim})
				if tc.field != "" {
					f.rdb.HSet(f.ctx, f.p.RateBucket("r"), tc.field, tc.value)
				}
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
				if err != nil {
					t.Fatalf("claim: %v (a is %q, b is %q, run index %v)", err, f.rawState("a"), f.rawState("b"),
						f.rdb.ZRange(f.ctx, f.p.Running(), 0, -1).Val())
				}
				var got []string
				for _, j := range res.Jobs {
					got = append(got, j.Local)
				}
				sort.Strings(got)
				if len(got) != 2 || got[0] != "a" || got[1] != "b" {
					t.Fatalf("claimed %v, want a and b", got)
				}
				if ttl := f.rdb.PTTL(f.ctx, f.p.RateBucket("r")).Val(); ttl > 0 && ttl < 7*24*time.Hour-time.Minute {
					t.Errorf("bucket kept %v, want a week at least", ttl)
				}
			})
		}
	}
}
