package store_test

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// corruptBucketOf overwrites the bucket of later jobs that a job delayed
// by d falls in (found by a probe job) with a string, and returns it.
func (f *fixture) corruptBucketOf(d time.Duration) string {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: "probe", Delay: d})
	bs := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
	if len(bs) != 1 {
		f.t.Fatalf("buckets %v, want one", bs)
	}
	f.overwrite(f.p.LaterBucket(bs[0]))
	return bs[0]
}

// checkBucketAnew checks that bucket bs was set aside and holds ids anew,
// and that they run once due.
func (f *fixture) checkBucketAnew(bs string, ids ...string) {
	f.t.Helper()
	if l := f.rdb.LRange(f.ctx, f.p.LaterBucket(bs), 0, -1).Val(); !slices.Equal(l, ids) {
		f.t.Errorf("bucket %s holds %v, want %v", bs, l, ids)
	}
	if v := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideLater, bs, 1)).Val(); v != "overwritten" {
		f.t.Errorf("set aside %q, want the overwritten value", v)
	}
	f.clk.Advance(2 * time.Minute)
	if got := f.claimed("due"); !slices.Equal(got, ids) {
		f.t.Errorf("claimed %v once due, want %v", got, ids)
	}
}

// TestScheduleLaterIntoCorruptBucket: sched_add (lib_ready.lua) RPUSHed a
// job due later into its bucket with redis.call; a bucket key that holds
// no list (the corruption sched_near already survives) made it raise
// after the job's hash was written, and after the writes for the call's
// earlier jobs, whose pushes to their ready lists are still deferred to
// flush(): they were left available on no list. Now the bucket's value is
// set aside (as sched_near sets it aside) and the bucket starts anew with
// the job: the call succeeds, the other jobs of the batch are claimable,
// and the delayed one runs when due.
func TestScheduleLaterIntoCorruptBucket(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/enqueue batch", func(t *testing.T) {
			f := newFixture(t, b)
			bs := f.corruptBucketOf(time.Minute)
			_, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{
				{Local: "a", Kind: "k", Payload: []byte("a"), MaxAttempts: 3},
				{Local: "late", Kind: "k", Payload: []byte("l"), MaxAttempts: 3, Delay: time.Minute},
				{Local: "c", Kind: "k", Payload: []byte("c"), MaxAttempts: 3},
			})
			if err != nil {
				t.Errorf("enqueue: %v (want the late job handled alone)", err)
			}
			got := f.claimed("n1")
			sort.Strings(got)
			if len(got) != 2 || got[0] != "a" || got[1] != "c" {
				t.Fatalf("claimed %v, want a and c (a is %q, list 0 %v)", got, f.rawState("a"), f.availableOrder(0))
			}
			f.checkBucketAnew(bs, "late")
		})
		t.Run(b.name+"/ack batch, retry", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"}, store.NewJob{Local: "z"})
			held := f.claimLeases(3, "w")
			bs := f.corruptBucketOf(time.Minute)
			res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: held["x"], Code: store.CodeFree},
				{Lease: held["y"], Code: store.CodeRetry, Delay: time.Minute, Message: "boom", Reason: "error"},
				{Lease: held["z"], Code: store.CodeOK},
			})
			if err != nil {
				t.Fatalf("ack: %v (want y handled alone; x is %q, list 0 %v, y is %q)", err, f.rawState("x"), f.availableOrder(0), f.rawState("y"))
			}
			if res[0].State != "available" || res[2].State != "completed" {
				t.Fatalf("ack %+v, want x available, z completed", res)
			}
			if got := f.claimed("n1"); !slices.Equal(got, []string{"x"}) {
				t.Fatalf("claimed %v, want x", got)
			}
			f.checkBucketAnew(bs, "y")
		})
	}
}
