package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestLaterBucketReturn: a job that leaves its bucket of later jobs
// before the bucket comes due (run now, a signal) and comes back to the
// same bucket (snoozed, or asleep on the same timer) is listed there
// once, however many times it does, and still runs at its due time. A
// second entry listed it twice (a delete's dry run counted it twice), and
// a job woken and put back many times filled the bucket. Once the bucket
// came due and its stale entry went, the job is listed anew, even with
// the store's clock gone back.
func TestLaterBucketReturn(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			bucket := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if len(bucket) != 1 {
				t.Fatalf("buckets %v, want one", bucket)
			}
			for range 3 {
				if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
					t.Fatal(err)
				}
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			}
			if got := f.rdb.LRange(f.ctx, f.p.LaterBucket(bucket[0]), 0, -1).Val(); len(got) != 1 {
				t.Fatalf("the bucket lists %v, want j once", got)
			}
			if l := f.listAll("scheduled", 10); len(l) != 1 {
				t.Errorf("listing scheduled jobs: %v, want [j] once", l)
			}
			if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 100, true); n != 1 {
				t.Errorf("a dry run counted %d, want 1", n)
			}
			f.clk.Advance(time.Hour)
			j := f.claimOne("w")
			if j.Local != "j" {
				t.Fatalf("claimed %s at the due time, want j", j.Local)
			}

			// out of its bucket again, which then comes due: its stale
			// entry goes, and so does the note of it; with the clock gone
			// back, the job put in that bucket is listed there anew
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			j = f.claimOne("w")
			f.clk.Advance(time.Hour)
			if _, err := f.promote(100); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(-time.Hour)
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			f.clk.Advance(time.Hour)
			if j := f.claimOne("w"); j.Local != "j" {
				t.Fatalf("claimed %s at the due time after the clock went back, want j", j.Local)
			}
		})
	}
}

// TestLaterNoteAfterPopWithClockBack: a job whose bucket was popped into
// sched (by a worker whose clock is ahead) is run now by a client whose
// clock is behind, then snoozed back into that bucket: it is indexed, and
// runs. A review found the run-now noted the bucket as still ahead
// (19c4b01), though the job had no entry there any more, and the snooze
// trusted the note: the job was indexed nowhere and never ran.
func TestLaterNoteAfterPopWithClockBack(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: 10 * time.Second})
			if n := len(f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()); n != 1 {
				t.Fatalf("buckets %d, want 1", n)
			}
			// a worker 6 s ahead: the bucket comes within the horizon and is popped
			f.clk.Advance(6 * time.Second)
			if r := f.claim(1, "w"); len(r.Jobs) != 0 {
				t.Fatalf("claimed %d early", len(r.Jobs))
			}
			if n := len(f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()); n != 0 {
				t.Fatalf("bucket not popped")
			}
			// a client 6 s behind runs it now, and the worker snoozes it
			f.clk.Advance(-6 * time.Second)
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			j := f.claimOne("w")
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: 10 * time.Second})
			if _, ok := f.due("j"); !ok {
				t.Errorf("j is scheduled but in no index (rb=%q)", f.rdb.HGet(f.ctx, f.p.Job("j"), "rb").Val())
			}
			f.clk.Advance(time.Minute)
			if r := f.claim(1, "w"); len(r.Jobs) != 1 {
				t.Fatalf("j never runs: claimed %d once due", len(r.Jobs))
			}
		})
	}
}

// TestLaterNoteAfterBucketSetAside: a job run now out of its bucket of
// later jobs notes the bucket; the bucket's key is found corrupt and set
// aside when another job is scheduled into it, taking the job's entry
// with it. Snoozed back into the bucket, the job is indexed there anew
// (the note is checked against the bucket), where a review found it
// indexed nowhere.
func TestLaterNoteAfterBucketSetAside(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			bs := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			f.overwrite(f.p.LaterBucket(bs[0]))
			f.enqueue(store.NewJob{Local: "k", Delay: time.Hour})
			j := f.claimOne("w")
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			if _, ok := f.due("j"); !ok {
				t.Errorf("j is scheduled but in no index; bucket holds %v",
					f.rdb.LRange(f.ctx, f.p.LaterBucket(bs[0]), 0, -1).Val())
			}
		})
	}
}

// TestDebounceSameBucketAfterPopWithClockBack: a debounce that keeps its
// holder in the same bucket only rewrites its due time (lib_enqueue.lua
// due_at), unless the holder is in sched: its bucket was popped by a
// clock ahead of the call's. A review found the sched entry kept the old
// time, promote took it for stale, and the holder never ran (since
// 3fcdab0).
func TestDebounceSameBucketAfterPopWithClockBack(t *testing.T) {
	t.Parallel()
	uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: 11 * time.Second, Unique: uq})
			f.clk.Advance(6 * time.Second)
			if r := f.claim(1, "w"); len(r.Jobs) != 0 {
				t.Fatalf("claimed %d early", len(r.Jobs))
			}
			f.clk.Advance(-6 * time.Second)
			f.duplicate(store.NewJob{Local: "j2", Delay: 14 * time.Second, Unique: uq})
			f.clk.Advance(12 * time.Second)
			if _, err := f.promote(100); err != nil {
				t.Fatal(err)
			}
			if _, ok := f.due("j"); !ok {
				t.Errorf("j is scheduled but in no index")
			}
			f.clk.Advance(time.Minute)
			if r := f.claim(1, "w"); len(r.Jobs) != 1 {
				t.Fatalf("j never runs: claimed %d once due", len(r.Jobs))
			}
		})
	}
}

// TestLaterNoteAfterIndexSetAside: a job run now out of its bucket notes
// it; the index of buckets is found corrupt and set aside when another
// job is scheduled; the job snoozed back into its bucket, whose entry
// stands, runs when due. A third review found the entry trusted and the
// bucket left out of the new index: the job never ran.
func TestLaterNoteAfterIndexSetAside(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			f.overwrite(f.p.Later())
			f.enqueue(store.NewJob{Local: "k", Delay: 3 * time.Hour})
			j := f.claimOne("w")
			if j.Local != "j" {
				t.Fatalf("claimed %s", j.Local)
			}
			f.ack(j, store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			f.clk.Advance(2 * time.Hour)
			if r := f.claim(1, "w"); len(r.Jobs) != 1 || r.Jobs[0].Local != "j" {
				t.Fatalf("j never runs once due: claimed %d; later index %v", len(r.Jobs),
					f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val())
			}
		})
	}
}

// TestLaterBucketReturnAfterAnother: a job leaves its bucket of later
// jobs early, is put into a second bucket, leaves that one early too, and
// comes back to the first: it is listed in each bucket once, and once by
// a listing and a dry run. A review found the note named the last bucket
// left only, so that the first got a second entry; and a debounced
// duplicate (which moves its holder between buckets) and a cancel (its
// job then redriven) noted no bucket at all.
func TestLaterBucketReturnAfterAnother(t *testing.T) {
	t.Parallel()
	uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
	// each moves job j, scheduled, to be due in d from now
	moves := map[string]func(f *fixture, step int, d time.Duration){
		"run now": func(f *fixture, _ int, d time.Duration) {
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				f.t.Fatal(err)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: d})
		},
		"debounce": func(f *fixture, step int, d time.Duration) {
			f.duplicate(store.NewJob{Local: fmt.Sprintf("dup%d", step), Delay: d, Unique: uq})
		},
		"cancel": func(f *fixture, _ int, d time.Duration) {
			if _, err := f.st.Cancel(f.ctx, f.ref("j"), retainCancelled); err != nil {
				f.t.Fatal(err)
			}
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"j"}); err != nil || errs[0] != nil {
				f.t.Fatalf("redrive: %v %v", errs, err)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: d})
		},
	}
	for _, b := range backends(t) {
		for name, move := range moves {
			t.Run(b.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "j", Delay: time.Hour, Unique: uq})
				for step, d := range []time.Duration{2 * time.Hour, time.Hour, 3 * time.Hour, 2 * time.Hour, time.Hour} {
					move(f, step, d)
				}
				buckets := f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val()
				if len(buckets) != 3 {
					t.Fatalf("buckets %v, want 3", buckets)
				}
				for _, bs := range buckets {
					if got := f.rdb.LRange(f.ctx, f.p.LaterBucket(bs), 0, -1).Val(); len(got) != 1 {
						t.Errorf("bucket %s lists %v, want j once", bs, got)
					}
				}
				if l := f.listAll("scheduled", 10); len(l) != 1 {
					t.Errorf("listing scheduled jobs: %v, want [j] once", l)
				}
				if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 100, true); n != 1 {
					t.Errorf("a dry run counted %d, want 1", n)
				}
				f.clk.Advance(time.Hour)
				if j := f.claimOne("w"); j.Local != "j" {
					t.Fatalf("claimed %s at the due time, want j", j.Local)
				}
				if r := f.claim(5, "w"); len(r.Jobs) != 0 {
					t.Fatalf("claimed %d more", len(r.Jobs))
				}
			})
		}
	}
}

// TestLaterNoteCorrupt: a job's note of the buckets it left (field rb)
// overwritten with garbage, or with more buckets than are kept, changes
// nothing but a listing: the job run now and snoozed back is indexed, and
// runs at its due time.
func TestLaterNoteCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for name, note := range map[string]string{
			"garbage": strings.Repeat("x\x00 -1 nan 1e400 ", 2000),
			"long":    strings.Repeat("99999999999 ", 100),
		} {
			t.Run(b.name+"/"+name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
				f.rdb.HSet(f.ctx, f.p.Job("j"), "rb", note)
				if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
					t.Fatal(err)
				}
				f.rdb.HSet(f.ctx, f.p.Job("j"), "rb", note+f.rdb.HGet(f.ctx, f.p.Job("j"), "rb").Val())
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
				if _, ok := f.due("j"); !ok {
					t.Fatalf("j is scheduled but in no index (rb=%.40q)", f.rdb.HGet(f.ctx, f.p.Job("j"), "rb").Val())
				}
				f.clk.Advance(time.Hour)
				if j := f.claimOne("w"); j.Local != "j" {
					t.Fatalf("claimed %s at the due time, want j", j.Local)
				}
			})
		}
	}
}

// TestLaterNoteKeptWithClockAhead: a job leaves bucket b1 early, is put
// into b2, and is run now out of b2 by a clock an hour ahead (by which b1
// looks due, though no claim moved it); the clock goes back, and the job
// is snoozed back into b1. It is listed there once. A review found the
// notes of buckets that looked due were dropped, and b1 got a second
// entry.
func TestLaterNoteKeptWithClockAhead(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: 3 * time.Hour})
			skew := time.Hour - 3*time.Second
			f.clk.Advance(skew)
			if _, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(-skew)
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeSnooze, Delay: time.Hour})
			for _, bs := range f.rdb.ZRange(f.ctx, f.p.Later(), 0, -1).Val() {
				if got := f.rdb.LRange(f.ctx, f.p.LaterBucket(bs), 0, -1).Val(); len(got) > 1 {
					t.Errorf("bucket %s lists %v, want j once", bs, got)
				}
			}
			if l := f.listAll("scheduled", 1); len(l) != 1 {
				t.Errorf("listing scheduled jobs: %v, want [j] once", l)
			}
			f.clk.Advance(time.Hour)
			if j := f.claimOne("w"); j.Local != "j" {
				t.Fatalf("claimed %s at the due time, want j", j.Local)
			}
		})
	}
}
