package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// deleteScan runs a delete scan to its end and returns the matches and
// the unreadable entries.
func (f *fixture) deleteScan(sel store.Selector, batch int, dry bool) (matched int, bad []string) {
	f.t.Helper()
	var cur store.ScanCursor
	for {
		st, err := f.st.DeleteStep(f.ctx, f.p, sel, cur, batch, dry)
		if err != nil {
			f.t.Fatal(err)
		}
		matched += st.Matched
		bad = append(bad, st.Unreadable...)
		cur = st.Cursor
		if st.Done {
			return matched, bad
		}
	}
}

// TestDeleteScan: a delete scan in small batches counts in a dry run
// what it then deletes, deletes only jobs of the scanned state and kind
// (scheduled and retryable share a set), leaves a running job and an
// entry whose key is not a job hash, and finishes the others of its batch.
func TestDeleteScan(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 11 {
				kind := "a"
				if i%3 == 0 {
					kind = "b"
				}
				jobs = append(jobs, store.NewJob{Local: "d" + string(rune('a'+i)), Kind: kind, MaxAttempts: 1})
			}
			f.enqueue(jobs...)
			for range jobs {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x"})
			}
			f.enqueue(store.NewJob{Local: "retry"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x", Delay: time.Hour})
			f.enqueue(store.NewJob{Local: "run"}, store.NewJob{Local: "later", Delay: time.Hour}, store.NewJob{Local: "later2", Delay: 2 * time.Hour})
			f.claimOne("w") // run
			// an entry whose key is not a job hash, in the middle of the set
			if err := f.rdb.Set(f.ctx, f.p.Job("bad"), "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			f.rdb.ZAdd(f.ctx, f.p.Terminal("archived"), redisZ(f, "bad"))

			sel := store.Selector{State: "archived", Kind: "a"}
			dry, bad := f.deleteScan(sel, 3, true)
			if dry != 7 || !slices.Equal(bad, []string{"bad"}) {
				t.Fatalf("dry run: matched %d, unreadable %v; want 7 and [bad]", dry, bad)
			}
			if d := cmp.Diff(map[string]int64{"archived": 11, "retryable": 1, "running": 1, "scheduled": 2}, f.stats()); d != "" {
				t.Fatalf("the dry run changed stats (-want +got):\n%s", d)
			}
			got, bad := f.deleteScan(sel, 3, false)
			if got != dry || !slices.Equal(bad, []string{"bad"}) {
				t.Fatalf("deleted %d (unreadable %v), the dry run counted %d", got, bad, dry)
			}
			if n, _ := f.deleteScan(store.Selector{State: "scheduled"}, 1, false); n != 2 {
				t.Fatalf("deleted %d scheduled jobs, want 2", n)
			}
			// their entries in the buckets of later jobs stay (removed
			// lazily): a second scan reads them, examines none
			examined := 0
			for cur, done := (store.ScanCursor{}), false; !done; {
				st, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "scheduled"}, cur, 1, true)
				if err != nil {
					t.Fatal(err)
				}
				examined, cur, done = examined+st.Examined, st.Cursor, st.Done
			}
			if examined != 1 { // the retryable job
				t.Fatalf("a second scan of scheduled jobs examined %d entries, want 1 (the retryable job; stale entries are not examined)", examined)
			}
			if d := cmp.Diff(map[string]int64{"archived": 4, "retryable": 1, "running": 1}, f.stats()); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
			for _, l := range []string{"retry", "run", "da", "dd"} {
				f.get(l) // still there
			}
			if v, _ := f.rdb.Get(f.ctx, f.p.Job("bad")).Result(); v != "x" {
				t.Fatalf("the unreadable entry's key holds %q", v)
			}
			if _, err := f.st.DeleteStep(f.ctx, f.p, store.Selector{State: "running"}, store.ScanCursor{}, 10, true); err == nil {
				t.Fatal("a delete scan of running jobs was not refused")
			}
		})
	}
}

// TestResendOperator: RunNow and a delete step delivered twice (a lost
// reply go-redis sends again, or a duplicate) answer what their first run
// did and apply once.
func TestResendOperator(t *testing.T) {
	t.Parallel()
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			l := newLossy(t)
			for _, sc := range []*lua.Script{lua.RunNow, lua.BulkDelete} {
				if err := sc.Load(l.ctx, l.rdb); err != nil {
					t.Fatal(err)
				}
			}
			l.archive("a", "b")
			l.enqueue(store.NewJob{Local: "later", Delay: time.Hour})
			check := l.fault(kind)
			prev, err := l.st.RunNow(l.ctx, l.ref("later"))
			check()
			if err != nil || prev != "scheduled" {
				t.Fatalf("run now: %q %v, want scheduled (its first answer)", prev, err)
			}
			if got := l.availableOrder(0); !slices.Equal(got, []string{"later"}) {
				t.Fatalf("available list %v, want later once", got)
			}
			l.wantStats(map[string]string{"available": "1", "scheduled": "0"})

			check = l.fault(kind)
			st, err := l.st.DeleteStep(l.ctx, l.p, store.Selector{State: "archived"}, store.ScanCursor{}, 10, false)
			check()
			if err != nil || st.Matched != 2 || !st.Done {
				t.Fatalf("delete step: %+v %v, want 2 deleted (its first answer)", st, err)
			}
			l.wantStats(map[string]string{"available": "1", "archived": "0"})
		})
	}
}

// redisZ is member at the score of f's first archived job.
func redisZ(f *fixture, member string) redis.Z {
	f.t.Helper()
	s, ok := f.score(f.p.Terminal("archived"), "da")
	if !ok {
		f.t.Fatal("no archived job da")
	}
	return redis.Z{Score: s, Member: member}
}
