package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestJoinWaitCountsItsMembers: a wait that names its children (WaitSpec)
// is not counted down, nor woken under FailFast, by a child of its step it
// does not name; a named child that finished between the join's read and
// the wait is counted at once; no mark is left but one per child marked.
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
			// each child has one mark at most, and the parent's
			// counters stay as they were
			counts, err := f.rdb.HGetAll(f.ctx, f.p.KidCount("P")).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"s": "4", "s:f": "2", "w:b": "", "w:c": ""}
			for k := range counts {
				if _, ok := want[k]; !ok {
					t.Errorf("field %s in kc:P (%v), want %v", k, counts, want)
				}
			}
			if counts["s"] != "4" || counts["s:f"] != "2" {
				t.Errorf("counters %v, want 4 finished, 2 failed", counts)
			}
		})
	}
}

// joinParent enqueues parent P, claims it and enqueues n children of it
// by step, c0, c1 ..., due in a day (pending while the test waits).
func joinParent(f *fixture, step string, n int) (*store.Job, []string) {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: "P"})
	p := f.claimOne("w")
	link := &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: step}
	kids := make([]string, n)
	for i := range kids {
		kids[i] = fmt.Sprint("c", i)
		f.enqueue(store.NewJob{Local: kids[i], Parent: link, Delay: 24 * time.Hour})
	}
	return p, kids
}

// marks counts the join marks in kc:P.
func (f *fixture) marks() int {
	f.t.Helper()
	counts, err := f.rdb.HGetAll(f.ctx, f.p.KidCount("P")).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for k := range counts {
		if strings.HasPrefix(k, "w:") {
			n++
		}
	}
	return n
}

// TestJoinMarksDoNotPileUp: a join whose wait ends at its recheck, again
// and again, marks its pending children anew each time, in place: the
// parent never holds more marks than children. Before, each wait added a
// mark per child under its own token (2,000 marks after 20 rechecks of
// 100 children in the review that found it).
func TestJoinMarksDoNotPileUp(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			p, kids := joinParent(f, "s", 20)
			for range 5 {
				f.ack(p, store.Ack{Code: store.CodeWait, Message: "s", Data: store.WaitSpec(kids), Reason: "a", Delay: time.Minute})
				f.clk.Advance(time.Minute)
				if _, err := f.promote(10); err != nil {
					t.Fatal(err)
				}
				p = f.claimOne("w")
				if p.Local != "P" {
					t.Fatalf("claimed %s at the recheck, want P", p.Local)
				}
			}
			if n := f.marks(); n != len(kids) {
				t.Errorf("%d marks after 5 rechecks of a join of %d children, want %d", n, len(kids), len(kids))
			}
		})
	}
}

// TestJoinWaitOfStaleToken: an earlier release ends a join's wait (its
// deliver, run-now, cancel or recheck) clearing the wait's step, count and
// policy but not its token (wm), and then waits by count. That wait must
// count every child of its step, as the earlier release's own deliver
// does: a token that is not the waiting attempt's fence is none. Before,
// the stale token made deliver look for marks no wait wrote, and the
// parent slept to its recheck (found by a review, with the earlier
// release's scripts run beside these).
func TestJoinWaitOfStaleToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			p, _ := joinParent(f, "s", 1)
			// the count-based wait of an older caller, with a token left
			// behind by an earlier attempt (fence 0: the claim made it 1)
			f.ack(p, store.Ack{Code: store.CodeWait, Message: "s", Data: []byte("1"), Reason: "a", Delay: 48 * time.Hour})
			testkit.Must(t, f.rdb.HSet(f.ctx, f.p.Job("P"), keys.FieldWaitMembers, "0").Err())
			f.clk.Advance(24 * time.Hour)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			c := f.claimOne("w")
			if c.Local != "c0" {
				t.Fatalf("claimed %s, want c0", c.Local)
			}
			f.ack(c, store.Ack{Code: store.CodeOK})
			if j, _ := f.get("P"); j.State != "available" {
				t.Fatalf("P after its child finished: %s waiting for %d, want available", j.State, j.WaitingCount)
			}
		})
	}
}

// TestJoinWaitOfChildrenOfSeveralSteps: a wait that names its children
// counts them whatever step spawned them (Children merged from two
// Spawn calls), as Join reads them.
func TestJoinWaitOfChildrenOfSeveralSteps(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			p, kids := joinParent(f, "a", 1)
			f.enqueue(store.NewJob{Local: "b0", Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "b"},
				Delay: 24 * time.Hour})
			f.ack(p, store.Ack{Code: store.CodeWait, Message: "a", Data: store.WaitSpec(append(kids, "b0")), Reason: "a", Delay: 48 * time.Hour})
			f.clk.Advance(24 * time.Hour)
			if _, err := f.promote(10); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			}
			if j, _ := f.get("P"); j.State != "available" {
				t.Fatalf("P after both its children finished: %s waiting for %d, want available", j.State, j.WaitingCount)
			}
		})
	}
}

// TestJoinEndedByRecheckDoesNotWakeALaterSleep: a join whose wait ends at
// its recheck (not by its count) leaves no wait behind: the parent then
// suspended in a sleep is not woken by a child of the join's step that
// finishes afterwards, whether the wait named its children or counted
// them.
func TestJoinEndedByRecheckDoesNotWakeALaterSleep(t *testing.T) {
	for _, b := range backends(t) {
		for _, named := range []bool{true, false} {
			t.Run(fmt.Sprint(b.name, "/named=", named), func(t *testing.T) {
				f := newFixture(t, b)
				p, kids := joinParent(f, "s", 2)
				data := store.WaitSpec(kids)
				if !named {
					data = []byte("2")
				}
				f.ack(p, store.Ack{Code: store.CodeWait, Message: "s", Data: data, Reason: "f", Delay: time.Minute})
				f.clk.Advance(time.Minute)
				if _, err := f.promote(10); err != nil {
					t.Fatal(err)
				}
				p = f.claimOne("w")
				if p.Local != "P" {
					t.Fatalf("claimed %s at the recheck, want P", p.Local)
				}
				if s := f.suspend(p, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "nap", After: 48 * time.Hour}}}); s != "scheduled" {
					t.Fatalf("sleep: %s, want scheduled", s)
				}
				f.clk.Advance(24 * time.Hour)
				c := f.claimOne("w")
				if c.Local != "c0" {
					t.Fatalf("claimed %s, want c0", c.Local)
				}
				f.ack(c, store.Ack{Code: store.CodeSkip, Message: "failed"}) // fails: would wake a FailFast wait
				if j, _ := f.get("P"); j.State != "scheduled" || !j.RunAt.Equal(epoch.Add(time.Minute+48*time.Hour)) {
					t.Fatalf("P asleep after its join's recheck, when a child finished: %s due %v, want scheduled due at its timer", j.State, j.RunAt)
				}
			})
		}
	}
}

// TestChildOfDeletedParentIsNotRecordedOnItsSuccessor: a child that
// finishes after its parent was deleted, and another job enqueued under
// the parent's ID, is not recorded on that job: the child's ID names its
// parent's creation time (keys.ChildLocal), which is not the new job's.
// Recorded there (k:, kc:), the records outlived the new job when it was
// discarded at its completion as a job of no steps (RetainCompleted < 0),
// with nothing left to delete them.
func TestChildOfDeletedParentIsNotRecordedOnItsSuccessor(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			clk := &testClock{now: epoch}
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, RetainArchived: retainArchived,
				RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now})
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
			f.enqueue(store.NewJob{Local: "P", Delay: time.Hour}) // not claimed before its children
			parent, _, err := f.st.Get(f.ctx, f.ref("P"))
			if err != nil {
				t.Fatal(err)
			}
			first, child := keys.ChildLocal("P", parent.Created, "s", 0), keys.ChildLocal("P", parent.Created, "s", 1)
			f.enqueue(store.NewJob{Local: first, Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}},
				store.NewJob{Local: child, Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}) // the first child, recorded on its parent
			if n, err := f.rdb.HLen(f.ctx, f.p.Kids("P")).Result(); err != nil || n != 1 {
				t.Fatalf("the parent's record of its finished child: %d, %v; want 1", n, err)
			}
			if _, err := f.st.Delete(f.ctx, f.ref("P")); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			f.enqueue(store.NewJob{Local: "P"}) // another job under the parent's ID
			c := f.claimOne("w")
			if c.Local != child {
				t.Fatalf("claimed %s, want the child %s", c.Local, child)
			}
			f.ack(c, store.Ack{Code: store.CodeOK})
			for _, k := range []string{f.p.Kids("P"), f.p.KidCount("P")} {
				if n, err := f.rdb.Exists(f.ctx, k).Result(); err != nil || n != 0 {
					t.Errorf("%s: the old parent's child was recorded on the job now under its ID (%d, %v)", k, n, err)
				}
			}
			p := f.claimOne("w")
			if p.Local != "P" {
				t.Fatalf("claimed %s, want P", p.Local)
			}
			f.ack(p, store.Ack{Code: store.CodeOK})
			for _, k := range []string{f.p.Job("P"), f.p.Kids("P"), f.p.KidCount("P")} {
				if n, err := f.rdb.Exists(f.ctx, k).Result(); err != nil || n != 0 {
					t.Errorf("%s left after P was completed and discarded (%d, %v)", k, n, err)
				}
			}
		})
	}
}

// TestChildRecordedOnAParentWithoutCheckpointsIsDeletedWithIt: a child
// that finishes while its parent runs is recorded on it (k:, kc:) before
// the parent's Spawn step is checkpointed, and the parent may never
// checkpoint it (Spawn failed after adding some children, a conflict or
// a refused child, and the handler went on without it). Completed then
// and discarded (RetainCompleted < 0), the parent is a job of no steps,
// deleted with its hash alone (delete_job's plain): its records of its
// children stayed in Redis for good.
func TestChildRecordedOnAParentWithoutCheckpointsIsDeletedWithIt(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			clk := &testClock{now: epoch}
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, RetainArchived: retainArchived,
				RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now})
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
			f.enqueue(store.NewJob{Local: "P"})
			p := f.claimOne("w")
			if p.Local != "P" {
				t.Fatalf("claimed %s, want P", p.Local)
			}
			child := keys.ChildLocal("P", p.Created, "s", 0)
			f.enqueue(store.NewJob{Local: child, Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "P"}, Step: "s"}})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}) // recorded on its running parent
			if n, err := f.rdb.HLen(f.ctx, f.p.Kids("P")).Result(); err != nil || n != 1 {
				t.Fatalf("the parent's record of its finished child: %d, %v; want 1", n, err)
			}
			f.ack(p, store.Ack{Code: store.CodeOK}) // no step checkpointed
			// and a parent acked in the call that records its child on it,
			// which read the parent as plain before
			f.enqueue(store.NewJob{Local: "Q"})
			q := f.claimOne("w")
			f.enqueue(store.NewJob{Local: keys.ChildLocal("Q", q.Created, "s", 0),
				Parent: &store.ParentRef{Ref: keys.Ref{Partition: f.p, Local: "Q"}, Step: "s"}})
			c := f.claimOne("w")
			if _, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: lease(c), Code: store.CodeOK}, {Lease: lease(q), Code: store.CodeOK}}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"P", "Q"} {
				for _, k := range []string{f.p.Job(id), f.p.Kids(id), f.p.KidCount(id)} {
					if n, err := f.rdb.Exists(f.ctx, k).Result(); err != nil || n != 0 {
						t.Errorf("%s left after %s was completed and discarded (%d, %v)", k, id, n, err)
					}
				}
			}
		})
	}
}
