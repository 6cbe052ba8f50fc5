package store_test

import (
	"sort"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestPromoteAndRedriveWithFractionalPriority: a job whose priority field is a
// number but no whole one ('1.5', as an older release or a hand could
// leave) is promoted with two other due jobs. priority_of (lib_ready.lua)
// takes 1.5 as in range, avail_key(1.5) is KEYS[10.5], nil, and
// push_later(nil) raises ("table index is nil") after promote has taken
// every due job before it out of sched and marked it available, with its
// push still deferred: those jobs are available on no list, for ever.
// Want: the pass succeeds, the good jobs are claimable, the bad one is
// parked (or at least listed somewhere), not the batch lost.
func TestPromoteAndRedriveWithFractionalPriority(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/promote", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", Delay: time.Second},
				store.NewJob{Local: "bad", Delay: time.Second, Priority: 1},
				store.NewJob{Local: "c", Delay: time.Second})
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldPriority, "1.5")
			f.clk.Advance(2 * time.Second)
			_, err := f.st.Maintain(f.ctx, f.p, 0, 10, 0)
			if err != nil {
				t.Errorf("maintain: %v (want the corrupt job handled alone)", err)
			}
			got := f.claimed("n1")
			sort.Strings(got)
			if len(got) < 2 || got[0] != "a" || got[len(got)-1] != "c" {
				t.Fatalf("claimed %v, want a and c (states: a=%s c=%s, lists 0: %v)", got, f.rawState("a"), f.rawState("c"), f.availableOrder(0))
			}
		})
		t.Run(b.name+"/redrive batch", func(t *testing.T) {
			f := newFixture(t, b)
			f.archive("a", "bad", "c")
			f.rdb.HSet(f.ctx, f.p.Job("bad"), keys.FieldPriority, "1.5")
			_, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRedrive, []string{"a", "bad", "c"})
			if err != nil {
				t.Errorf("redrive: %v (want the corrupt job handled alone)", err)
			}
			got := f.claimed("n1")
			sort.Strings(got)
			if len(got) < 2 || got[0] != "a" || got[len(got)-1] != "c" {
				t.Fatalf("claimed %v, want a and c (states: a=%s c=%s)", got, f.rawState("a"), f.rawState("c"))
			}
		})
	}
}
