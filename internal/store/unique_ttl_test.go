package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestUniqueTTLOutlivesItsJob: a unique key with a TTL is held for the
// TTL from its enqueue (flow.WithUnique), also once its job finished and
// was deleted: with completed jobs discarded, or swept by retention
// before the TTL ran out, a duplicate within the TTL adds nothing and
// names the holder. Before, the key was taken as free once its job was
// gone, and a second "once a day" job ran within the hour.
func TestUniqueTTLOutlivesItsJob(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			enq := func(f *fixture, local string, u store.Unique) store.EnqueueResult {
				t.Helper()
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: local, Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Unique: u}})
				if err != nil {
					t.Fatal(err)
				}
				return res[0]
			}
			// completed jobs discarded
			clk := &testClock{now: epoch}
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, CrashLimit: 3, Now: clk.Now})
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
			digest := store.Unique{Key: "digest:user-42", TTL: 24 * time.Hour}
			if r := enq(f, "d1", digest); r.Status != store.Added {
				t.Fatalf("first: %+v", r)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			if f.rdb.Exists(f.ctx, f.p.Job("d1")).Val() != 0 {
				t.Fatal("the completed job was kept")
			}
			clk.Advance(time.Minute)
			if r := enq(f, "d2", digest); r.Status != store.Held || r.Existing != "d1" {
				t.Errorf("a duplicate a minute into a 24 h TTL, its holder completed and discarded: %+v; want folded into d1", r)
			}

			// swept by retention
			f = newFixture(t, b) // completed jobs kept an hour
			weekly := store.Unique{Key: "weekly-report", TTL: 7 * 24 * time.Hour}
			if r := enq(f, "w1", weekly); r.Status != store.Added {
				t.Fatalf("first: %+v", r)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			f.clk.Advance(2 * time.Hour)
			if _, err := f.sweep(100); err != nil {
				t.Fatal(err)
			}
			if f.rdb.Exists(f.ctx, f.p.Job("w1")).Val() != 0 {
				t.Fatal("retention kept the completed job")
			}
			if r := enq(f, "w2", weekly); r.Status != store.Held || r.Existing != "w1" {
				t.Errorf("a duplicate 2 h into a 7-day TTL, its holder swept: %+v; want folded into w1", r)
			}

			// without a TTL the key goes with its job
			once := store.Unique{Key: "once"}
			if r := enq(f, "o1", once); r.Status != store.Added {
				t.Fatalf("first: %+v", r)
			}
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			if r := enq(f, "o2", once); r.Status != store.Added {
				t.Errorf("a duplicate after its holder finished, no TTL: %+v; want added", r)
			}
		})
	}
}
