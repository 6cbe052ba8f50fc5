package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// TestChildWithBrokenParentLink: a child whose link to its parent lost a
// part (corrupt data: no parent step, no parent ID, no local parent ID)
// ends alone: the call that ends it (an ack beside a healthy job's, a
// claim that parks it past its deadline) goes through, the healthy job
// is completed or leased in full, and the parent is not told (its join's
// recheck runs it). Before, the notification raised after the call's
// writes: the healthy job was left completed but still in the running
// set, or running in no index, never reaped (found by an audit).
func TestChildWithBrokenParentLink(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, field string
		local       bool // the parent lives in the child's partition
	}{
		{"remote parent, no step", keys.FieldParentStep, false},
		{"remote parent, no parent", keys.FieldParent, false},
		{"local parent, no step", keys.FieldParentStep, true},
		{"local parent, no local ID", keys.FieldParentLocal, true},
	}
	for _, b := range backends(t) {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name+"/ack", func(t *testing.T) {
				f := newFixture(t, b)
				parent := parentOf(f, c.local)
				f.enqueue(store.NewJob{Local: "good"}, store.NewJob{Local: "child", Parent: &store.ParentRef{Ref: parent, Step: "s"}})
				held := f.claimLeases(10, "w")
				must(t, f.rdb.HDel(f.ctx, f.p.Job("child"), c.field).Err())
				res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{{Lease: held["good"], Code: store.CodeOK}, {Lease: held["child"], Code: store.CodeOK}})
				if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
					t.Fatalf("ack of a healthy job and the child: %+v %v", res, err)
				}
				for _, id := range []string{"good", "child"} {
					_, running := f.score(f.p.Running(), id)
					_, done := f.score(f.p.Terminal("completed"), id)
					if j, _ := f.get(id); j.State != "completed" || running || !done {
						t.Errorf("%s: %s, in the running set %v, in the completed set %v; want completed, indexed so", id, j.State, running, done)
					}
				}
			})
			t.Run(b.name+"/"+c.name+"/claim", func(t *testing.T) {
				f := newFixture(t, b)
				parent := parentOf(f, c.local)
				f.enqueue(store.NewJob{Local: "good"},
					store.NewJob{Local: "child", Deadline: epoch.Add(time.Second), Parent: &store.ParentRef{Ref: parent, Step: "s"}})
				must(t, f.rdb.HDel(f.ctx, f.p.Job("child"), c.field).Err())
				f.clk.Advance(time.Minute)
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 10, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
				if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Local != "good" {
					t.Fatalf("claim of a healthy job beside the child past its deadline: %+v %v", res, err)
				}
				if _, running := f.score(f.p.Running(), "good"); !running {
					t.Error("the leased job is not in the running set: never reaped")
				}
				if j, _ := f.get("child"); j.State != "archived" {
					t.Errorf("child: %s, want archived past its deadline", j.State)
				}
			})
		}
	}
}

// parentOf is the parent of the test's child: a job of the fixture's
// partition (enqueued here, waiting) when local, else one elsewhere.
func parentOf(f *fixture, local bool) keys.Ref {
	if !local {
		return keys.Ref{Partition: f.st.Partition("elsewhere", 0), Local: "P"}
	}
	f.enqueue(store.NewJob{Local: "P", Delay: time.Hour})
	return f.ref("P")
}

// TestPinnedFallbackDelayNotANumber: a job pinned with a fallback whose
// delay field is not a number (corrupt data; "nan" and "inf" are taken
// by Lua's tonumber and refused by ZADD) is listed on its worker with
// its fallback due at once, and the jobs made ready beside it are
// listed: a promotion of both, and a run now of the pinned one. Before,
// ZADD raised after the writes, and both jobs were left available on no
// list (found by an audit).
func TestPinnedFallbackDelayNotANumber(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, v := range []string{"nan", "inf", "-inf", "x", "-5"} {
			t.Run(b.name+"/"+v, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "good", Delay: time.Second},
					store.NewJob{Local: "bad", Delay: 2 * time.Second, Sticky: store.Sticky{Worker: "wb", Mode: "a", After: time.Minute}},
					store.NewJob{Local: "later", Delay: time.Hour, Sticky: store.Sticky{Worker: "wb", Mode: "f", After: time.Minute}})
				for _, id := range []string{"bad", "later"} {
					must(t, f.rdb.HSet(f.ctx, f.p.Job(id), keys.FieldStickyDelay, v).Err())
				}
				f.clk.Advance(time.Minute)
				if n, err := f.promote(10); err != nil || n != 2 {
					t.Fatalf("promote: %d %v, want 2", n, err)
				}
				if got := f.availableOrder(0); len(got) != 1 || got[0] != "good" {
					t.Errorf("available list %v, want good", got)
				}
				if _, err := f.st.RunNow(f.ctx, f.ref("later")); err != nil {
					t.Fatalf("run now: %v", err)
				}
				pins := f.rdb.LRange(f.ctx, f.p.Pinned("wb"), 0, -1).Val()
				if len(pins) != 2 {
					t.Errorf("pin list of wb %v, want bad and later", pins)
				}
				for _, id := range []string{"bad", "later"} {
					if at, ok := f.score(f.p.PinDeadlines(), id); !ok || at != float64(f.clk.Now().UnixMilli()) {
						t.Errorf("%s's fallback due at %v (%v), want now", id, at, ok)
					}
				}
			})
		}
	}
}
