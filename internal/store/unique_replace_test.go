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

// TestReplaceIntoAQuarantinedTwinHolds: a duplicate that replaces a
// unique holder's arguments with those of a job quarantined already
// holds the holder behind that job, as the same arguments enqueued anew
// are held: available (with a concurrency key) or scheduled. Released,
// the quarantined job frees them. Before, the holders ran the poison
// arguments.
func TestReplaceIntoAQuarantinedTwinHolds(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "q", Payload: []byte("poison"), Hold: "fp-poison"})
			for range 3 { // the fixture's crash limit
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeCrash, Reason: "panic", Message: "boom"})
				f.clk.Advance(time.Minute)
			}
			if j, _ := f.get("q"); j.State != "quarantined" {
				t.Fatalf("q is %s, want quarantined", j.State)
			}
			holders := []store.NewJob{
				{Local: "now", Payload: []byte("fine"), Hold: "fp-fine", Unique: store.Unique{Key: "A", OnDuplicate: "replace"},
					Limits: store.Limits{ConcurrencyKey: "ck", ConcurrencyLimit: 1}},
				{Local: "later", Payload: []byte("fine"), Hold: "fp-fine", Unique: store.Unique{Key: "B", OnDuplicate: "replace"},
					Delay: time.Minute},
			}
			f.enqueue(holders...)
			for _, h := range holders {
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: h.Local + "-dup", Kind: "k", Payload: []byte("poison"),
					MaxAttempts: 3, Hold: "fp-poison", Unique: h.Unique}})
				if err != nil || res[0].Existing != h.Local {
					t.Fatalf("duplicate of %s: %+v %v, want folded into it", h.Local, res, err)
				}
				if j, _ := f.get(h.Local); j.State != "scheduled" || j.HeldBy != "q" {
					t.Fatalf("%s after the replace: %s held by %q, want scheduled held by q", h.Local, j.State, j.HeldBy)
				}
			}
			f.enqueue(store.NewJob{Local: "free", Payload: []byte("other")})
			f.clk.Advance(time.Hour)
			if got := locals(f.claim(10, "w").Jobs); len(got) != 1 || !got["free"] {
				t.Fatalf("claimed %v, want only free (the holders held)", got)
			}
			f.wantStats(map[string]string{"scheduled": "2", "quarantined": "1", "running": "1"})
			if errs, err := f.st.RedriveIDs(f.ctx, f.p, store.ActionRelease, []string{"q"}); err != nil || errs[0] != nil {
				t.Fatalf("release: %v %v", errs, err)
			}
			if got := locals(f.claim(10, "w").Jobs); len(got) != 3 || !got["q"] || !got["now"] || !got["later"] {
				t.Fatalf("after the release claimed %v, want q, now and later", got)
			}
		})
	}
}
