package store_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSingleJobCallsOnStateOfNoState: an operator's call on one job
// whose state field names no state (corrupt data) fails with
// ErrMalformed and writes nothing, as a call on a key of another type
// does (TestSingleJobCallsOnCorruptKey): not a StateError that reads as a
// healthy job in a state the call does not take. (Cancel and delete take
// such a job: they are how an operator clears it.) Discarding a signal
// kept for it discards nothing.
func TestSingleJobCallsOnStateOfNoState(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "bad"})
			ref := f.ref("bad")
			if _, err := f.st.Signal(f.ctx, ref, "go", []byte("kept"), ""); err != nil {
				t.Fatal(err)
			}
			f.rdb.HSet(f.ctx, f.p.Job("bad"), "s", "bogus")
			calls := map[string]func() error{
				"run now": func() error { _, err := f.st.RunNow(f.ctx, ref); return err },
				"signal":  func() error { _, err := f.st.Signal(f.ctx, ref, "go", nil, ""); return err },
				"watch":   func() error { _, _, err := f.st.Watch(f.ctx, ref); return err },
				"reroute": func() error {
					_, err := f.st.Reroute(f.ctx, ref, store.Sticky{})
					return err
				},
				"discard a signal": func() error { _, _, _, err := f.st.Unsignal(f.ctx, ref, "go", 0); return err },
			}
			before := f.rdb.HGetAll(f.ctx, f.p.Job("bad")).Val()
			steps := f.rdb.HGetAll(f.ctx, f.p.Steps("bad")).Val()
			for name, call := range calls {
				if err := call(); !errors.Is(err, store.ErrMalformed) {
					t.Errorf("%s: %v, want ErrMalformed", name, err)
				}
				if after := f.rdb.HGetAll(f.ctx, f.p.Job("bad")).Val(); len(after) != len(before) || after["s"] != "bogus" {
					t.Fatalf("after %s the job holds %v, want %v", name, after, before)
				}
				if after := f.rdb.HGetAll(f.ctx, f.p.Steps("bad")).Val(); len(after) != len(steps) {
					t.Fatalf("after %s its checkpoints hold %v, want %v", name, after, steps)
				}
			}
		})
	}
}
