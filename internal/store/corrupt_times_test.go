package store_test

import (
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// A time a job's hash holds as a number (its lease start, its due time,
// a timer's wake time) may be corrupt data that Lua's tonumber takes:
// 'nan', 'inf', '1e400' (inf), '-1e400'. Each is that job's alone.

// TestCorruptLeaseStartIsUnknownRunTime: an ack's completion tallies the
// attempt's run time (store time less F.lease_start) by a table of bucket
// fields; a lease start of 'nan' made the index NaN, which raised after
// the batch's earlier outcomes had written; '-1e400' tallied a bucket
// 'rt:inf'. A lease start that is no whole number of ms is an unknown run
// time now: the job completes, untallied, and so do the others.
func TestCorruptLeaseStartIsUnknownRunTime(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"nan", "inf", "1e400", "-1e400", "-1", "x"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "bad"}, store.NewJob{Local: "c"})
				held := f.claimLeases(3, "w")
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldLeaseStart, v)
				res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
					{Lease: held["a"], Code: store.CodeOK},
					{Lease: held["bad"], Code: store.CodeOK},
					{Lease: held["c"], Code: store.CodeOK},
				})
				if err != nil {
					t.Fatalf("ack: %v (a is %q)", err, f.rawState("a"))
				}
				for i, r := range res {
					if r.State != "completed" {
						t.Errorf("outcome %d: %+v, want completed", i, r)
					}
				}
				bucket := regexp.MustCompile(`^rt:\d+$`)
				mk := f.p.Minute(f.clk.Now().UnixMilli() / 60000)
				for field, n := range f.rdb.HGetAll(f.ctx, mk).Val() {
					if len(field) > 3 && field[:3] == "rt:" && !bucket.MatchString(field) {
						t.Errorf("tallied run time bucket %q (%s)", field, n)
					}
				}
			})
		}
	}
}
