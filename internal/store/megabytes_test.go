package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// megabytes is a value long enough to overflow gopher-lua's pattern
// matcher (miniredis) where a repeated item takes all of it: the matcher
// recurses once per character, and about 2.5 MB passes the Go stack's
// 1 GB, which ends the process. It is digits only, so that %d, %S,
// [^\n], [^:], [^~] and . all take the whole of it.
var megabytes = strings.Repeat("1", 3<<20)

// TestValuesOfMegabytes: a value of megabytes where a script matches a
// pattern (lua/patterns_test.go lists the sites) is read as any other
// value that is not what the script looks for, on every backend. Before,
// each of these ended a test binary on miniredis with "fatal error:
// stack overflow". The effects' values are in effects_test.go (an
// INCRBY onto a user's key holding such a value).
func TestValuesOfMegabytes(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/awaits, run now", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			f.rdb.HSet(f.ctx, f.p.Job("j"), keys.FieldAwaits, megabytes)
			if prev, err := f.st.RunNow(f.ctx, f.ref("j")); err != nil || prev != "scheduled" {
				t.Fatalf("run now: %q %v, want scheduled (an awaits of another fence suspends nothing)", prev, err)
			}
			if s := f.rawState("j"); s != "available" {
				t.Fatalf("state %q, want available", s)
			}
		})
		t.Run(b.name+"/awaits, signal", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j", Delay: time.Hour})
			f.rdb.HSet(f.ctx, f.p.Job("j"), keys.FieldAwaits, megabytes+" go")
			r, err := f.st.Signal(f.ctx, f.ref("j"), "go", []byte("p"), "")
			if err != nil || r.State != "scheduled" {
				t.Fatalf("signal: %+v %v, want the job left scheduled (its awaits is not of its fence)", r, err)
			}
		})
		t.Run(b.name+"/sticky_left, reroute", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"})
			f.rdb.HSet(f.ctx, f.p.Job("j"), keys.FieldStickyLeft, megabytes+" w1")
			if _, err := f.st.Reroute(f.ctx, f.ref("j"), store.Sticky{Worker: "w1", Mode: "wait", After: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Job("j"), keys.FieldStickyLeft).Val(); v != megabytes {
				t.Fatalf("sticky_left holds %d bytes, want the long word alone (w1, the worker it goes to, leaves it)", len(v))
			}
		})
		t.Run(b.name+"/child entry", func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "P", Delay: time.Hour})
			f.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}})
			c := f.claimOne("w")
			f.rdb.HSet(f.ctx, f.p.Kids("P"), "c", megabytes)
			if r := f.ack(c, store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("ack: %+v", r)
			}
			if v := f.rdb.HGet(f.ctx, f.p.Kids("P"), "c").Val(); !strings.HasPrefix(v, "completed\n") {
				t.Fatalf("child entry %.40q, want the completion", v)
			}
		})
		t.Run(b.name+"/layout", func(t *testing.T) {
			f := newFixture(t, b)
			f.rdb.HSet(f.ctx, keys.Queues(f.st.NS()), "q", megabytes)
			if _, _, err := f.st.RegisterLayout(f.ctx, "q", 2); !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("register over a layout of megabytes: %v, want ErrMalformed", err)
			}
		})
		t.Run(b.name+"/retention record", func(t *testing.T) {
			f := newFixture(t, b)
			f.rdb.HSet(f.ctx, keys.Retention(f.st.NS()), "q", megabytes)
			now := f.clk.Now()
			if newer, err := f.st.RecordRetention(f.ctx, []string{"q"}, "w", now); err != nil || len(newer) != 0 {
				t.Fatalf("record over a record of megabytes: %v %v, want it replaced", newer, err)
			}
			// a record whose worker ID is megabytes long is read whole: an
			// older worker's record leaves it
			if _, err := f.st.RecordRetention(f.ctx, []string{"q2"}, megabytes, now); err != nil {
				t.Fatal(err)
			}
			if newer, err := f.st.RecordRetention(f.ctx, []string{"q2"}, "w", now.Add(-time.Second)); err != nil || len(newer) != 1 {
				t.Fatalf("an older worker's record: newer %v %v, want q2 kept", newer, err)
			}
		})
		t.Run(b.name+"/dead effect ID", func(t *testing.T) {
			f := newFixture(t, b)
			errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{megabytes + "-1"})
			if err != nil || len(errs) != 1 || !errors.Is(errs[0], sluicetype.ErrNoDeadEffect) {
				t.Fatalf("revive: %d answers, the first %.60v; error %v; want ErrNoDeadEffect for it", len(errs), errs, err)
			}
		})
	}
}
