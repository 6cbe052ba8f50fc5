package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestUnsignal: discarding a job's next kept signal of one name takes the
// earliest of them (the one a wait takes next) and answers it, leaving
// the later ones and other names; none kept answers seq 0; a running job
// is refused, nothing discarded (its attempt may be taking it); no such
// job is ErrNotFound; a checkpoints key of another type is ErrMalformed,
// not "none kept".
func TestUnsignal(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"}, store.NewJob{Local: "r"})
			for _, sg := range [][2]string{{"a", "bad"}, {"ab", "other"}, {"a", "good"}} {
				if _, err := f.st.Signal(f.ctx, f.ref("j"), sg[0], []byte(sg[1]), ""); err != nil {
					t.Fatal(err)
				}
			}
			seq, payload, state, err := f.st.Unsignal(f.ctx, f.ref("j"), "a", 0)
			if err != nil || seq != 1 || string(payload) != "bad" || state != "available" {
				t.Fatalf("unsignal a: #%d %q %q %v, want #1 bad of an available job", seq, payload, state, err)
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 0); err != nil || seq != 3 || string(payload) != "good" {
				t.Fatalf("unsignal a again: #%d %q %v, want #3 good", seq, payload, err)
			}
			if seq, _, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 0); err != nil || seq != 0 {
				t.Fatalf("unsignal a with none kept: #%d %v, want 0", seq, err)
			}
			// only the signal a console showed: #4 is kept, #5 after it
			for _, p := range []string{"fourth", "fifth"} {
				if _, err := f.st.Signal(f.ctx, f.ref("j"), "a", []byte(p), ""); err != nil {
					t.Fatal(err)
				}
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 3); err != nil || seq != -4 || payload != nil {
				t.Fatalf("unsignal a #3, taken since: #%d %q %v, want -4 (the next is #4), nothing discarded", seq, payload, err)
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 5); err != nil || seq != -4 {
				t.Fatalf("unsignal a #5, behind #4: #%d %q %v, want -4, nothing discarded", seq, payload, err)
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 4); err != nil || seq != 4 || string(payload) != "fourth" {
				t.Fatalf("unsignal a #4: #%d %q %v, want #4 fourth", seq, payload, err)
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "a", 0); err != nil || seq != 5 || string(payload) != "fifth" {
				t.Fatalf("unsignal a after #4: #%d %q %v, want #5 fifth (kept by the refusals)", seq, payload, err)
			}
			if seq, payload, _, err = f.st.Unsignal(f.ctx, f.ref("j"), "ab", 0); err != nil || seq != 2 || string(payload) != "other" {
				t.Fatalf("unsignal ab: #%d %q %v, want #2 (kept beside a)", seq, payload, err)
			}
			if _, err := f.st.Signal(f.ctx, f.ref("r"), "a", []byte("x"), ""); err != nil {
				t.Fatal(err)
			}
			if got := locals(f.claim(10, "w").Jobs); !got["r"] {
				t.Fatalf("claimed %v, want r among them", got)
			}
			var se *sluicetype.StateError
			if seq, _, _, err := f.st.Unsignal(f.ctx, f.ref("r"), "a", 0); !errors.As(err, &se) || se.State != "running" || seq != 0 {
				t.Fatalf("unsignal a running job: #%d %v, want a StateError", seq, err)
			}
			if n, err := f.rdb.HLen(f.ctx, f.p.Steps("r")).Result(); err != nil || n == 0 {
				t.Fatalf("the running job's kept signal: %d fields, %v", n, err)
			}
			if _, _, _, err := f.st.Unsignal(f.ctx, f.ref("nope"), "a", 0); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("unsignal a missing job: %v", err)
			}
			f.enqueue(store.NewJob{Local: "c"})
			if err := f.rdb.Set(f.ctx, f.p.Steps("c"), "not a hash", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := f.st.Unsignal(f.ctx, f.ref("c"), "a", 0); !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("unsignal a job whose checkpoints key holds a string: %v, want ErrMalformed", err)
			}
		})
	}
}

// TestUnsignalResent: a discard whose reply is lost (go-redis sends it
// again) or that is delivered twice answers what its first run did, and
// discards one signal: the second is still kept.
func TestUnsignalResent(t *testing.T) {
	t.Parallel()
	for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			l := newLossy(t)
			for _, sc := range []*lua.Script{lua.Signal, lua.Unsignal} {
				if err := sc.Load(context.Background(), l.rdb); err != nil {
					t.Fatal(err)
				}
			}
			l.enqueue(store.NewJob{Local: "j"})
			ref := keys.Ref{Partition: l.p, Local: "j"}
			for _, p := range []string{"first", "second"} {
				if _, err := l.st.Signal(l.ctx, ref, "a", []byte(p), ""); err != nil {
					t.Fatal(err)
				}
			}
			check := l.fault(kind)
			seq, payload, _, err := l.st.Unsignal(l.ctx, ref, "a", 0)
			check()
			if err != nil || seq != 1 || string(payload) != "first" {
				t.Fatalf("unsignal: #%d %q %v, want #1 first", seq, payload, err)
			}
			if n, err := l.rdb.HLen(l.ctx, l.p.Steps("j")).Result(); err != nil || n != 1 {
				t.Fatalf("kept after the discard: %d fields, %v; want the second signal", n, err)
			}
		})
	}
}
