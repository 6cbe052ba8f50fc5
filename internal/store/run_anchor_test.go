package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRunAnchorKeepsASkiplist: a claim leaves the running index a
// skiplist, even for one job, and the index keeps its anchor (at +inf,
// never reaped) when its last job completes, so that the next claim's
// ZADD does not scan a listpack of every running job (a listpack took
// 7% of a no-op job's Redis work at 50-odd running). An index a release
// without the anchor left a listpack is turned by the next claim, and one
// a renewal starts anew gets the anchor too.
func TestRunAnchorKeepsASkiplist(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			encoding := func() string {
				t.Helper()
				if b.name == "miniredis" {
					return "skiplist" // miniredis has no encodings to check
				}
				enc, err := f.rdb.ObjectEncoding(f.ctx, f.p.Running()).Result()
				if err != nil {
					t.Fatal(err)
				}
				return enc
			}
			anchored := func() {
				t.Helper()
				if s, ok := f.score(f.p.Running(), keys.RunAnchor); !ok || !math.IsInf(s, 1) {
					t.Fatalf("the running index's anchor: %v %v, want +inf", s, ok)
				}
			}
			// an index as an older release leaves it: a listpack
			if err := f.rdb.ZAdd(f.ctx, f.p.Running(), redis.Z{Score: 1e15, Member: "older"}).Err(); err != nil {
				t.Fatal(err)
			}
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			a := f.claimOne("w")
			if e := encoding(); e != "skiplist" {
				t.Fatalf("after a claim the running index is a %s", e)
			}
			anchored()
			f.rdb.ZRem(f.ctx, f.p.Running(), "older")
			// a page that may examine one entry lists the job, not the anchor
			if page, err := f.st.List(f.ctx, f.p, "running", "", 1, 1, ""); err != nil || len(page.Entries) != 1 || page.Entries[0].Job.Local != "a" {
				t.Fatalf("the running jobs' first page of one: %+v %v, want a", page, err)
			}
			// a renewal that finds the index overwritten (corrupt data) sets
			// it aside and starts it anew, with the anchor
			if err := f.rdb.Set(f.ctx, f.p.Running(), "overwritten", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if lost, _, err := f.st.Renew(f.ctx, f.p, []store.Renewal{{Lease: lease(a), Duration: time.Minute}}); err != nil || len(lost) != 0 {
				t.Fatalf("renew: %+v %v, want held", lost, err)
			}
			anchored()
			if e := encoding(); e != "skiplist" {
				t.Fatalf("after a renewal anew the running index is a %s", e)
			}
			f.ack(a, store.Ack{Code: store.CodeOK})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			if n := runningJobs(t, f.ctx, f.rdb, f.p); n != 0 {
				t.Fatalf("%d jobs running, want none", n)
			}
			anchored()
			if e := encoding(); e != "skiplist" {
				t.Fatalf("with no job running the index is a %s", e)
			}
			// the reaper passes over it, however late
			f.clk.Advance(1000 * 24 * time.Hour)
			if m, err := f.st.Maintain(f.ctx, f.p, 10, 0, 0); err != nil || len(m.Reaped) != 0 {
				t.Fatalf("maintain: %+v %v, want nothing reaped", m, err)
			}
			anchored()
		})
	}
}
