package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestDebounceSameBatch: a debounced duplicate in the same enqueue call as
// its holder makes the holder scheduled, and leaves no entry of it on a
// ready list: deleting it then leaves none either. A helper's audit found
// the holder's push, deferred to the call's end, landed after the
// duplicate took it off its list, so the scheduled holder stayed listed
// as available, and its delete left the entry behind.
func TestDebounceSameBatch(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "u", OnDuplicate: "debounce"}
			if _, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{
				{Local: "A", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Unique: uq},
				{Local: "B", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Delay: time.Hour, Unique: uq},
			}); err != nil {
				t.Fatal(err)
			}
			if j, _ := f.get("A"); j.State != "scheduled" {
				t.Fatalf("holder A is %s, want scheduled (debounced)", j.State)
			}
			if l := f.availableOrder(0); len(l) != 0 {
				t.Errorf("ready list holds %v while A is scheduled", l)
			}
			if _, err := f.st.Delete(f.ctx, f.ref("A")); err != nil {
				t.Fatal(err)
			}
			if l := f.availableOrder(0); len(l) != 0 {
				t.Errorf("ready list after A was deleted: %v", l)
			}
		})
	}
}
