package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestHoldSecondTwin: two jobs of one fingerprint quarantined; the
// first is released (or deleted). The second is still quarantined, so a
// new copy of the payload is added held, by the second
// (flow.WithQuarantineHold holds a job "while a job of the same kind and
// arguments is quarantined"). A helper's audit found the hold named the
// first only: freeing it let new copies run.
func TestHoldSecondTwin(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, how := range []string{"release", "delete"} {
			t.Run(b.name+"/"+how, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", Hold: "fp"}, store.NewJob{Local: "c", Hold: "fp", Delay: 10 * time.Hour})
				f.crashOut("a")
				f.clk.Advance(10 * time.Hour)
				f.crashOut("c")
				if j, _ := f.get("c"); j.State != "quarantined" {
					t.Fatalf("c is %s", j.State)
				}
				if how == "release" {
					if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"a"}); err != nil || errs[0] != nil {
						t.Fatalf("release a: %v %v", errs, err)
					}
				} else if _, err := f.st.Delete(f.ctx, f.ref("a")); err != nil {
					t.Fatal(err)
				}
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "d", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
				if err != nil {
					t.Fatal(err)
				}
				if res[0].HeldBy != "c" {
					j, _ := f.get("d")
					t.Fatalf("d enqueued while c (same fingerprint) is quarantined: %+v, state %s held by %q; want held by c", res[0], j.State, j.HeldBy)
				}
			})
		}
	}
}
