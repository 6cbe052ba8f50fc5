package store_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestStepEffectsGoToTheirCheckpoint: in one call, checkpoints with
// effects and checkpoints without are interleaved, and each applies its
// own effects only (the script learns which have any from one argument,
// not from a count per checkpoint).
func TestStepEffectsGoToTheirCheckpoint(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"}, store.NewJob{Local: "d"})
			held := f.claimLeases(4, "w")
			bal, other := f.key("bal"), f.key("other")
			step := func(id string, fx ...sluicetype.Effect) store.Checkpoint {
				return store.Checkpoint{Lease: held[id], Field: "s", Record: []byte("r-" + id), Mode: store.ModeOnce,
					Commit: id + ":s", Effects: fx}
			}
			rs, err := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{
				step("a"), step("b", fx("INCRBY", bal, "5")), step("c"),
				step("d", fx("INCRBY", bal, "7"), fx("INCRBY", other, "1")),
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				if r.Err != nil {
					t.Errorf("checkpoint %d: %v", i, r.Err)
				}
			}
			if v := f.rdb.Get(f.ctx, bal).Val(); v != "12" {
				t.Errorf("bal %q, want 12 (b's 5 and d's 7, once each)", v)
			}
			if v := f.rdb.Get(f.ctx, other).Val(); v != "1" {
				t.Errorf("other %q, want 1 (d's)", v)
			}
			for _, id := range []string{"a", "b", "c", "d"} {
				if v := f.rdb.HGet(f.ctx, f.p.Steps(id), "s").Val(); v != "r-"+id {
					t.Errorf("%s's checkpoint %q, want %q", id, v, "r-"+id)
				}
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
