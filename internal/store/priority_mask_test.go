package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sluicehq/sluice/internal/store"
)

// TestPriorityMask: a claim pops only the priority lists the mask flags,
// so the mask must never hide a job: not after a list was emptied and
// filled again, not for a job that reaches its list by retry promotion or
// by a crash, and not when the mask is missing (data written before it
// existed), which means every list.
func TestPriorityMask(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			claimed := func(want string) *store.Job {
				t.Helper()
				res := f.claim(10, "w")
				if len(res.Jobs) != 1 || res.Jobs[0].Local != want {
					t.Fatalf("claimed %v, want only %s", locals(res.Jobs), want)
				}
				return res.Jobs[0]
			}
			f.enqueue(store.NewJob{Local: "a", Priority: 5})
			f.ack(claimed("a"), store.Ack{Code: store.CodeOK}) // list 5 emptied: flag cleared
			f.enqueue(store.NewJob{Local: "b", Priority: 5})
			b5 := claimed("b")
			f.ack(b5, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x", Delay: time.Minute})
			if got := f.claim(10, "w").Jobs; len(got) != 0 {
				t.Fatalf("claimed %v before the retry was due", locals(got))
			}
			f.clk.Advance(time.Minute) // promoted by the claim itself
			claimed("b")
			f.clk.Advance(time.Hour) // the lease expires: reaped back to list 5
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Minute) // past the crash delay
			f.ack(claimed("b"), store.Ack{Code: store.CodeOK})
			f.enqueue(store.NewJob{Local: "c", Priority: 7})
			if err := f.rdb.Del(f.ctx, f.p.Priorities()).Err(); err != nil {
				t.Fatal(err)
			}
			claimed("c")
			if err := f.rdb.LPush(f.ctx, f.p.Available(3), "ghost").Err(); err != nil {
				t.Fatal(err) // a stale entry in an unflagged list is harmless
			}
			f.enqueue(store.NewJob{Local: "d"})
			claimed("d")
		})
	}
}

// TestPriorityMaskMissing: with no mask (older data, or evicted) claims
// of one job at a time still reach every job of every list, although the
// first of them empties a list and so writes a mask.
func TestPriorityMaskMissing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a5", Priority: 5}, store.NewJob{Local: "b5", Priority: 5}, store.NewJob{Local: "c3", Priority: 3})
			if err := f.rdb.Del(f.ctx, f.p.Priorities()).Err(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for range 5 {
				for _, j := range f.claim(1, "w").Jobs {
					got = append(got, j.Local)
				}
			}
			if diff := cmp.Diff([]string{"a5", "b5", "c3"}, got); diff != "" {
				t.Fatalf("claimed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPriorityMaskUnpin: unpinning an available job puts it on its
// priority's shared list, which the mask must flag even when that list
// was emptied before.
func TestPriorityMaskUnpin(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "first", Priority: 5})
			res := f.claim(10, "w") // finds list 5 emptied: its flag is cleared
			if len(res.Jobs) != 1 {
				t.Fatalf("claimed %v", locals(res.Jobs))
			}
			f.ack(res.Jobs[0], store.Ack{Code: store.CodeOK})
			f.enqueue(store.NewJob{Local: "pinned", Priority: 5, Sticky: store.Sticky{Worker: "gone", Mode: "w"}})
			if _, err := f.st.Reroute(f.ctx, f.ref("pinned"), store.Sticky{}); err != nil {
				t.Fatal(err)
			}
			if j := f.claimOne("w"); j.Local != "pinned" {
				t.Fatalf("claimed %s, want the unpinned job", j.Local)
			}
		})
	}
}
