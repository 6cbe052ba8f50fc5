package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestCancelKeepsWhatItIsGiven: an operator's cancel keeps the job as
// long as the call says (the retention of the queue's workers), not the
// store's own RetainCancelled, and one call's retention does not stay in
// the call head the store keeps per partition for the next.
func TestCancelKeepsWhatItIsGiven(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
			for _, c := range []struct {
				local string
				keep  time.Duration
			}{{"a", 5 * 24 * time.Hour}, {"b", time.Minute}, {"c", retainCancelled}} {
				if _, err := f.st.Cancel(f.ctx, f.ref(c.local), c.keep); err != nil {
					t.Fatal(err)
				}
				got, ok := f.score(f.p.Terminal("cancelled"), c.local)
				if want := float64(epoch.Add(c.keep).UnixMilli()); !ok || got != want {
					t.Errorf("%s cancelled to be kept %v: deletion time %v (%v), want %v", c.local, c.keep, got, ok, want)
				}
			}
		})
	}
}
