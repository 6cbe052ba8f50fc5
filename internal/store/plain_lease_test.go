package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestPlainLeaseMarked: a claim marks the lease ID of a job with no
// parent, unique key or concurrency key, and only such a job's: the ack
// of a marked lease reads none of the three. The mark is '=' (BARE_LEASE)
// when the job's payload is in its hash, '+' (PLAIN_LEASE) when it has a
// key of its own: the ack of a discarded completion deletes the hash
// alone, or the hash and the body key. The mark is the claim's word
// only: an outcome naming a lease ID with a mark the claim did not give
// is stale, and the unique key it would have skipped stays held until
// the real outcome frees it.
func TestPlainLeaseMarked(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			clk := &testClock{now: epoch}
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, RetainArchived: retainArchived,
				RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now})
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
			f.enqueue(store.NewJob{Local: "P"})
			f.enqueue(
				store.NewJob{Local: "plain"},
				store.NewJob{Local: "big", Payload: bytes.Repeat([]byte("b"), 833)}, // BODY_MIN + 1: a body key,
				store.NewJob{Local: "uq", Unique: store.Unique{Key: "report"}},
				store.NewJob{Local: "cc", Limits: store.Limits{ConcurrencyKey: "c", ConcurrencyLimit: 2}},
				store.NewJob{Local: "kid", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}},
			)
			jobs := map[string]*store.Job{}
			for _, j := range f.claim(6, "w").Jobs {
				jobs[j.Local] = j
			}
			for id, want := range map[string]string{"P": "=", "plain": "=", "big": "+", "uq": "", "cc": "", "kid": ""} {
				j := jobs[id]
				if j == nil {
					t.Fatalf("job %s not claimed", id)
				}
				if mark := strings.TrimLeft(j.LeaseID[len(j.LeaseID)-1:], "0123456789"); mark != want {
					t.Fatalf("job %s claimed under lease ID %q: want the mark %q", id, j.LeaseID, want)
				}
			}
			if exists(t, f, f.p.Body("big")) != 1 {
				t.Fatal("big's payload has no key of its own")
			}

			forged := *jobs["uq"]
			forged.LeaseID += "+"
			if r := f.ack(&forged, store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Fatalf("an outcome with a forged mark: %+v, want stale", r)
			}
			// a bare mark on a job with a body key would leave the key behind
			forged = *jobs["big"]
			forged.LeaseID = strings.TrimSuffix(forged.LeaseID, "+") + "="
			if r := f.ack(&forged, store.Ack{Code: store.CodeOK}); !errors.Is(r.Err, store.ErrStale) {
				t.Fatalf("an outcome with a bare mark on a job with a body key: %+v, want stale", r)
			}
			if r, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "twin", Kind: "k", Payload: []byte("x"), MaxAttempts: 1,
				Unique: store.Unique{Key: "report"}}}); err != nil || r[0].Status != store.Held {
				t.Fatalf("a twin while uq runs: %+v, %v; want held by its unique key", r, err)
			}
			for _, id := range []string{"plain", "big", "uq", "cc", "kid", "P"} {
				if r := f.ack(jobs[id], store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
					t.Fatalf("ack of %s: %+v", id, r)
				}
			}
			for _, k := range []string{f.p.Job("plain"), f.p.Job("big"), f.p.Body("big"), f.p.Job("P")} {
				if exists(t, f, k) != 0 {
					t.Fatalf("%s left after its job was completed and discarded", k)
				}
			}
			f.enqueue(store.NewJob{Local: "twin2", Unique: store.Unique{Key: "report"}}) // the key is free again
			if s := f.stats(); s["running"] != 0 {
				t.Fatalf("state counts %v, want none running", s)
			}
		})
	}
}
