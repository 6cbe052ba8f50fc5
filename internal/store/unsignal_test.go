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

// TestUnsignal: discarding a job's kept signals of one name takes them
// all and leaves the others; none kept is 0; a running job is refused,
// nothing discarded (its attempt may be taking one); no such job is
// ErrNotFound.
func TestUnsignal(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "j"}, store.NewJob{Local: "r"})
			for _, name := range []string{"a", "b", "a"} {
				if _, err := f.st.Signal(f.ctx, f.ref("j"), name, []byte("x"), ""); err != nil {
					t.Fatal(err)
				}
			}
			if n, state, err := f.st.Unsignal(f.ctx, f.ref("j"), "a"); err != nil || n != 2 || state != "available" {
				t.Fatalf("unsignal a: %d %q %v, want 2 of an available job", n, state, err)
			}
			if n, _, err := f.st.Unsignal(f.ctx, f.ref("j"), "a"); err != nil || n != 0 {
				t.Fatalf("unsignal a again: %d %v, want 0", n, err)
			}
			if n, _, err := f.st.Unsignal(f.ctx, f.ref("j"), "b"); err != nil || n != 1 {
				t.Fatalf("unsignal b: %d %v, want 1 (kept beside a)", n, err)
			}
			if _, err := f.st.Signal(f.ctx, f.ref("r"), "a", []byte("x"), ""); err != nil {
				t.Fatal(err)
			}
			if got := locals(f.claim(10, "w").Jobs); !got["r"] {
				t.Fatalf("claimed %v, want r among them", got)
			}
			var se *sluicetype.StateError
			if n, _, err := f.st.Unsignal(f.ctx, f.ref("r"), "a"); !errors.As(err, &se) || se.State != "running" || n != 0 {
				t.Fatalf("unsignal a running job: %d %v, want a StateError", n, err)
			}
			if n, err := f.rdb.HLen(f.ctx, f.p.Steps("r")).Result(); err != nil || n == 0 {
				t.Fatalf("the running job's kept signal: %d fields, %v", n, err)
			}
			if _, _, err := f.st.Unsignal(f.ctx, f.ref("nope"), "a"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("unsignal a missing job: %v", err)
			}
		})
	}
}

// TestUnsignalResent: a discard whose reply is lost (go-redis sends it
// again) or that is delivered twice answers what its first run did: the
// signals it discarded, not 0.
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
			for range 3 {
				if _, err := l.st.Signal(l.ctx, ref, "a", []byte("x"), ""); err != nil {
					t.Fatal(err)
				}
			}
			check := l.fault(kind)
			n, _, err := l.st.Unsignal(l.ctx, ref, "a")
			check()
			if err != nil || n != 3 {
				t.Fatalf("unsignal: %d %v, want 3", n, err)
			}
		})
	}
}
