package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestReplaceTakesTheHoldFingerprint: a unique job with a quarantine hold
// whose arguments a duplicate replaces (OnDuplicate "replace") takes the
// duplicate's hold fingerprint with them. Once quarantined (its new
// arguments crash workers), a copy of those arguments is added held
// behind it, and a job of its old, harmless arguments is not. Before, it
// kept the old fingerprint: the copy ran, the innocent job was held.
func TestReplaceTakesTheHoldFingerprint(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			uq := store.Unique{Key: "K", OnDuplicate: "replace"}
			f.enqueue(store.NewJob{Local: "a", Payload: []byte("old"), Hold: "fp-old", Unique: uq})
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "dup", Kind: "k", Payload: []byte("new"), MaxAttempts: 3, Hold: "fp-new", Unique: uq}})
			if err != nil || res[0].Status != store.Held || res[0].Existing != "a" {
				t.Fatalf("duplicate: %+v %v, want folded into a", res, err)
			}
			for range 3 { // the fixture's crash limit
				j := f.claimOne("w")
				if string(j.Payload) != "new" {
					t.Fatalf("a claimed with payload %q, want the replaced one", j.Payload)
				}
				f.ack(j, store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
				f.clk.Advance(time.Minute)
			}
			if j, _ := f.get("a"); j.State != "quarantined" {
				t.Fatalf("a is %s, want quarantined", j.State)
			}
			add := func(local, payload, fp string) store.EnqueueResult {
				t.Helper()
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: local, Kind: "k", Payload: []byte(payload), MaxAttempts: 3, Hold: fp}})
				if err != nil {
					t.Fatal(err)
				}
				return res[0]
			}
			if r := add("copy", "new", "fp-new"); r.HeldBy != "a" {
				t.Errorf("a copy of a's (replaced) arguments: %+v, want held behind a", r)
			}
			if r := add("innocent", "old", "fp-old"); r.HeldBy != "" {
				t.Errorf("a job of the arguments a no longer has: %+v, want not held", r)
			}
		})
	}
}
