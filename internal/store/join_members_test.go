package store_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestJoinWaitCountsItsMembers: a wait that names its children (WaitSpec)
// is not counted down, nor woken under FailFast, by a child of its step it
// does not name; a named child that finished between the join's read and
// the wait is counted at once; each named child's mark goes with its
// delivery, so none is left once the wait is over.
func TestJoinWaitCountsItsMembers(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "P"})
			parent := f.claimOne("w")
			link := &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}
			for _, c := range []string{"a", "b", "c", "d"} {
				f.enqueue(store.NewJob{Local: c, Parent: link})
			}
			finish := func(code store.Code) string {
				t.Helper()
				j := f.claimOne("w")
				f.ack(j, store.Ack{Code: code, Message: "x"})
				return j.Local
			}
			// a finishes after the join read it as pending: its wait names
			// a, b and c, and counts a at once
			if c := finish(store.CodeOK); c != "a" {
				t.Fatalf("finished %s, want a", c)
			}
			if r := f.ack(parent, store.Ack{Code: store.CodeWait, Message: "s", Data: store.WaitSpec([]string{"a", "b", "c"}),
				Reason: "f", Delay: 3600e9}); r.State != "scheduled" {
				t.Fatalf("wait: %+v, want scheduled", r)
			}
			if got, _ := f.get("P"); got.WaitingCount != 2 {
				t.Fatalf("waiting for %d, want 2 (b and c)", got.WaitingCount)
			}
			// b done; d, outside the join, fails: neither wakes it
			finish(store.CodeOK)
			c := f.claimOne("w")
			d := f.claimOne("w")
			if c.Local != "c" || d.Local != "d" {
				t.Fatalf("claimed %s and %s, want c and d", c.Local, d.Local)
			}
			f.ack(d, store.Ack{Code: store.CodeSkip, Message: "outside"})
			if got, _ := f.get("P"); got.State != "scheduled" || got.WaitingCount != 1 {
				t.Fatalf("after b and d: %s waiting for %d, want scheduled waiting for 1 (c)", got.State, got.WaitingCount)
			}
			// c fails: the FailFast wait is over
			f.ack(c, store.Ack{Code: store.CodeSkip, Message: "inside"})
			if got, _ := f.get("P"); got.State != "available" {
				t.Fatalf("after c failed: %s, want available", got.State)
			}
			counts, err := f.rdb.HGetAll(f.ctx, f.p.KidCount("P")).Result()
			if err != nil {
				t.Fatal(err)
			}
			for k := range counts {
				if strings.HasPrefix(k, "w:") {
					t.Errorf("mark %s left after its child's delivery (%v)", k, counts)
				}
			}
		})
	}
}
