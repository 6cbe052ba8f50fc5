package store_test

import (
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestPromoteAndRedriveWithFractionalPriority: a job whose priority field
// is a number but no whole one in 0..9 ('1.5', 'nan', as an older release
// or a hand could leave) is promoted, or redriven, with two other jobs.
// priority_of (lib_ready.lua) took 1.5 and NaN as in range, avail_key of
// them is KEYS[10.5], nil, and push_later(nil) raised ("table index is
// nil") after the call had taken every job before it out of sched (or the
// archived set) and marked it available, with its push still deferred:
// those jobs were available on no list, for ever. Now such a priority is
// 0, as a missing one is: all three jobs run.
func TestPromoteAndRedriveWithFractionalPriority(t *testing.T) {
	t.Parallel()
	want := []string{"a", "bad", "c"}
	for _, b := range backends(t) {
		for _, prio := range []string{"1.5", "nan"} {
			t.Run(b.name+"/promote/"+prio, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Delay: time.Second},
					store.NewJob{Local: "bad", Delay: time.Second, Priority: 1},
					store.NewJob{Local: "c", Delay: time.Second})
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldPriority, prio)
				f.clk.Advance(2 * time.Second)
				if _, err := f.st.Maintain(f.ctx, f.p, 0, 10, 0); err != nil {
					t.Errorf("maintain: %v (want the job with priority %s run at 0)", err, prio)
				}
				got := f.claimed("n1")
				sort.Strings(got)
				if !slices.Equal(got, want) {
					t.Fatalf("claimed %v, want %v (states: a=%s c=%s, list 0: %v)", got, want, f.rawState("a"), f.rawState("c"), f.availableOrder(0))
				}
			})
			t.Run(b.name+"/redrive batch/"+prio, func(t *testing.T) {
				f := newFixture(t, b)
				f.archive("a", "bad", "c")
				f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldPriority, prio)
				if _, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a", "bad", "c"}); err != nil {
					t.Errorf("redrive: %v (want the job with priority %s run at 0)", err, prio)
				}
				if got := f.availableOrder(0); !slices.Equal(got, want) {
					t.Fatalf("list 0 holds %v, want %v", got, want)
				}
				got := f.claimed("n1")
				sort.Strings(got)
				if !slices.Equal(got, want) {
					t.Fatalf("claimed %v, want %v (states: a=%s c=%s)", got, want, f.rawState("a"), f.rawState("c"))
				}
			})
		}
	}
}
