package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestStateCounts: the per-state counters of several partitions (in
// different slots on a cluster) are read in one call; a partition without
// jobs has none.
func TestStateCounts(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c", Delay: time.Hour})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			other := f.st.Partition("other", 3)
			got, err := f.st.StateCounts(f.ctx, []keys.Partition{f.p, other})
			if err != nil {
				t.Fatal(err)
			}
			want := []map[string]int64{{"available": 1, "scheduled": 1, "completed": 1, "running": 0}, {}}
			// A counter that went back to zero may be kept or removed.
			if _, ok := got[0]["running"]; !ok {
				delete(want[0], "running")
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("counts (-want +got):\n%s", d)
			}
		})
	}
}

// TestPartitionContentsReadsIndexes: PartitionContents reads, for
// several partitions (in different slots on a cluster) in one call,
// the counters and the partition's own indexes, so that jobs still
// listed are seen with the counters key gone; the running index's
// anchor and a later bucket's entry whose job is gone count nothing; an
// index key of another type is ErrMalformed, naming it.
func TestPartitionContentsReadsIndexes(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"},
				store.NewJob{Local: "d", Delay: 2 * time.Second}, store.NewJob{Local: "e", Delay: time.Hour})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			f.claimOne("w")
			buckets := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(buckets) != 1 {
				t.Fatalf("later buckets %v, want one", buckets)
			}
			// the entry of a job that left its bucket early
			if err := f.rdb.RPush(f.ctx, f.p.LaterBucket(buckets[0]), "gone").Err(); err != nil {
				t.Fatal(err)
			}
			if err := f.rdb.Del(f.ctx, f.p.Stats()).Err(); err != nil {
				t.Fatal(err)
			}
			other := f.st.Partition("other", 3)
			got, err := f.st.PartitionContents(f.ctx, []keys.Partition{f.p, other})
			if err != nil {
				t.Fatal(err)
			}
			want := []store.Contents{
				{Counts: map[string]int64{}, Indexes: map[string]int64{"avail:0": 1, "sched": 1, "later": 1, "run": 1, "completed": 1}},
				{Counts: map[string]int64{}, Indexes: map[string]int64{}},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("contents (-want +got):\n%s", d)
			}

			// the waits: a concurrency key's, a rate class's, a pinned job's
			cc := store.Limits{ConcurrencyKey: "c", ConcurrencyLimit: 1}
			rate := store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			pin := store.Sticky{Worker: "elsewhere", Mode: "a", After: time.Hour}
			f.enqueue(store.NewJob{Local: "c1", Limits: cc}, store.NewJob{Local: "c2", Limits: cc},
				store.NewJob{Local: "r1", Limits: rate}, store.NewJob{Local: "r2", Limits: rate},
				store.NewJob{Local: "p", Sticky: pin})
			f.claim(10, "w")
			if err := f.rdb.Del(f.ctx, f.p.Stats()).Err(); err != nil {
				t.Fatal(err)
			}
			got, err = f.st.PartitionContents(f.ctx, []keys.Partition{f.p})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"cwn", "rwake", "pinx"} {
				if got[0].Indexes[k] != 1 {
					t.Errorf("with a job waiting in each: indexes %v, want %s 1", got[0].Indexes, k)
				}
			}

			if err := f.rdb.Set(f.ctx, f.p.Available(5), "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.PartitionContents(f.ctx, []keys.Partition{f.p}); !errors.Is(err, store.ErrMalformed) || !strings.Contains(err.Error(), f.p.Available(5)) {
				t.Errorf("an index of another type: %v, want ErrMalformed naming %s", err, f.p.Available(5))
			}
		})
	}
}

// TestPartitionContentsIgnoresEntriesOfJobsGone: the indexes that keep
// entries of jobs gone until they come due (a later bucket's entry of a
// deleted job, rwake's class whose waiting jobs were deleted) count
// nothing once the partition's jobs are all deleted, so that a shrink of
// an emptied partition is not refused. (pinx's entry of a deleted pinned
// job, once kept too, leaves with it: unlist.)
func TestPartitionContentsIgnoresEntriesOfJobsGone(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b)
			rate := store.Limits{RateClass: "r", RateJobs: 1, RatePer: time.Hour, RateBurst: 1}
			f.enqueue(store.NewJob{Local: "r1", Limits: rate}, store.NewJob{Local: "r2", Limits: rate},
				store.NewJob{Local: "p", Sticky: store.Sticky{Worker: "elsewhere", Mode: "a", After: time.Hour}},
				store.NewJob{Local: "later", Delay: 30 * 24 * time.Hour})
			for _, j := range f.claim(10, "w").Jobs {
				f.ack(j, store.Ack{Code: store.CodeOK})
			}
			for _, id := range []string{"r1", "r2", "p", "later"} {
				if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: id}); err != nil {
					t.Fatalf("delete %s: %v", id, err)
				}
			}
			for _, k := range []string{f.p.Later(), f.p.RateWake()} {
				if f.rdb.Exists(f.ctx, k).Val() == 0 {
					t.Fatalf("%s is gone: the test shows nothing", k)
				}
			}
			if n := f.rdb.Exists(f.ctx, f.p.PinDeadlines()).Val(); n != 0 {
				t.Errorf("pinx holds the fallback of deleted job p: every claim reads it until it falls due")
			}
			got, err := f.st.PartitionContents(f.ctx, []keys.Partition{f.p})
			if err != nil {
				t.Fatal(err)
			}
			if len(got[0].Indexes) != 0 {
				t.Errorf("indexes of a partition whose jobs are all deleted: %v, want none", got[0].Indexes)
			}
		})
	}
}
