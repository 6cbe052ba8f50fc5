package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStepEffectsGoToTheirCheckpoint: in one call, checkpoints with
// effects and checkpoints without are interleaved, and each applies its
// own effects only (the script learns which have any from one argument,
// not from a count per checkpoint). Which checkpoint took which effects
// shows: a, whose step is written already, applies none; d alone writes
// an entry to the outbox; and x, whose effects Go refuses, is not sent,
// so the map must not count it.
func TestStepEffectsGoToTheirCheckpoint(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "x"}, store.NewJob{Local: "b"},
				store.NewJob{Local: "c"}, store.NewJob{Local: "d"})
			held := f.claimLeases(5, "w")
			if err := f.rdb.HSet(f.ctx, f.p.Steps("a"), "s", "before").Err(); err != nil {
				t.Fatal(err)
			}
			bal, far := f.key("bal"), redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			step := func(id string, fx ...sluicetype.Effect) store.Checkpoint {
				return store.Checkpoint{Lease: held[id], Field: "s", Record: []byte("r-" + id), Mode: store.ModeOnce,
					Commit: id + ":s", Effects: fx}
			}
			rs, err := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{
				step("a"), step("x", fx("INCRBY", bal, "no number")), step("b", fx("INCRBY", bal, "5")), step("c"),
				step("d", fx("INCRBY", bal, "7"), fx("INCRBY", far, "1")),
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 5 {
				t.Fatalf("%d results, want 5", len(rs))
			}
			if !errors.Is(rs[0].Err, store.ErrStepDone) {
				t.Errorf("a: %v, want ErrStepDone", rs[0].Err)
			}
			if !errors.Is(rs[1].Err, store.ErrInvalidEffect) {
				t.Errorf("x: %v, want ErrInvalidEffect", rs[1].Err)
			}
			for i, id := range []string{"a", "x", "b", "c", "d"} {
				if i >= 2 && rs[i].Err != nil {
					t.Errorf("%s: %v", id, rs[i].Err)
				}
				want := 0
				if id == "d" {
					want = 1 // its effect elsewhere
				}
				if rs[i].Outboxed != want {
					t.Errorf("%s: %d outboxed, want %d", id, rs[i].Outboxed, want)
				}
			}
			if v := f.rdb.Get(f.ctx, bal).Val(); v != "12" {
				t.Errorf("bal %q, want 12 (b's 5 and d's 7, once each)", v)
			}
			for id, want := range map[string]string{"a": "before", "b": "r-b", "c": "r-c", "d": "r-d"} {
				if v := f.rdb.HGet(f.ctx, f.p.Steps(id), "s").Val(); v != want {
					t.Errorf("%s's checkpoint %q, want %q", id, v, want)
				}
			}
			if n := f.rdb.Exists(f.ctx, f.p.Steps("x")).Val(); n != 0 {
				t.Errorf("x, refused, has checkpoints")
			}
		})
	}
}

// TestStepRefusesMalformedEffectsMap: a hand-made step call whose map of
// the checkpoints with effects does not have one mark, '0' or '1', per
// checkpoint, or does not account for every effect sent, is refused
// before anything is written: read short, it would have taken a
// checkpoint's effects for none and applied the next one's to another;
// read as none, it would have dropped the effects sent and answered ok.
func TestStepRefusesMalformedEffectsMap(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, spoil := range []string{"01", "0101", "1", "0x0", "000", "", "110"} {
			t.Run(b.name+"/"+spoil, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
				held := f.claimLeases(3, "w")
				bal := f.key("bal")
				b.rdb.AddHook(spoilCalls{lua.Step, func(args []any) {
					// FCALL (or EVALSHA) name numkeys KEYS... ARGV...: ARGV[11]
					if nk, err := strconv.Atoi(fmt.Sprint(args[2])); err == nil && 3+nk+10 < len(args) {
						args[3+nk+10] = spoil
					}
				}})
				var cs []store.Checkpoint
				for _, id := range []string{"a", "b", "c"} {
					c := store.Checkpoint{Lease: held[id], Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: id + ":s"}
					if id == "b" {
						c.Effects = []sluicetype.Effect{fx("INCRBY", bal, "5")}
					}
					cs = append(cs, c)
				}
				_, err := f.st.Checkpoints(f.ctx, f.p, cs)
				if err == nil || !strings.Contains(err.Error(), "malformed effects") {
					t.Fatalf("checkpoints: %v, want malformed effects", err)
				}
				if n := f.rdb.Exists(f.ctx, bal).Val(); n != 0 {
					t.Errorf("bal written by a refused call")
				}
				for _, id := range []string{"a", "b", "c"} {
					if n := f.rdb.Exists(f.ctx, f.p.Steps(id)).Val(); n != 0 {
						t.Errorf("%s has checkpoints after a refused call", id)
					}
				}
			})
		}
	}
}
