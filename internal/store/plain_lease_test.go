package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestPlainLeaseMarked: a claim marks the lease ID of a job with no
// parent, unique key or concurrency key ('+' at its end), and only such a
// job's: the ack of a marked lease reads none of the three. The mark is
// the claim's word only: an outcome naming a lease ID with a mark the
// claim did not give is stale, and the unique key it would have skipped
// stays held until the real outcome frees it.
func TestPlainLeaseMarked(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "P"})
			f.enqueue(
				store.NewJob{Local: "plain"},
				store.NewJob{Local: "uq", Unique: store.Unique{Key: "report"}},
				store.NewJob{Local: "cc", Limits: store.Limits{ConcurrencyKey: "c", ConcurrencyLimit: 2}},
				store.NewJob{Local: "kid", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}},
			)
			jobs := map[string]*store.Job{}
			for _, j := range f.claim(5, "w").Jobs {
				jobs[j.Local] = j
			}
			for id, want := range map[string]bool{"P": true, "plain": true, "uq": false, "cc": false, "kid": false} {
				if j := jobs[id]; j == nil || strings.HasSuffix(j.LeaseID, "+") != want {
					t.Fatalf("job %s claimed as %+v: want a lease ID marked plain: %v", id, j, want)
				}
			}

			forged := *jobs["uq"]
			forged.LeaseID += "+"
			if r := f.ack(&forged, store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Fatalf("an outcome with a forged mark: %+v, want stale", r)
			}
			if r, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "twin", Kind: "k", Payload: []byte("x"), MaxAttempts: 1,
				Unique: store.Unique{Key: "report"}}}); err != nil || r[0].Status != store.Held {
				t.Fatalf("a twin while uq runs: %+v, %v; want held by its unique key", r, err)
			}
			for _, id := range []string{"plain", "uq", "cc", "kid", "P"} {
				if r := f.ack(jobs[id], store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
					t.Fatalf("ack of %s: %+v", id, r)
				}
			}
			f.enqueue(store.NewJob{Local: "twin2", Unique: store.Unique{Key: "report"}}) // the key is free again
			if s := f.stats(); s["running"] != 0 {
				t.Fatalf("state counts %v, want none running", s)
			}
		})
	}
}
