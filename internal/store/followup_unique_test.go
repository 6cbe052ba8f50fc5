package store_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestUniqueFollowUpRelayedTwice: a follow-up whose unique key another job
// holds is folded into that job (here its payload replaces the holder's)
// by its first relay. Relayed again (a second relayer read the entry, or
// the first died before deleting it) after the holder finished, it must
// not be enqueued as a job of its own: the work would run twice. Its
// first relay is remembered as any relayed enqueue that settled it.
func TestUniqueFollowUpRelayedTwice(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			next := f.st.Partition("next", 0)
			uq := store.Unique{Key: "ship-42", OnDuplicate: "replace"}
			res, err := f.st.Enqueue(f.ctx, next, []store.NewJob{{Local: "holder", Kind: "ship", Payload: []byte("old"), MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Added {
				t.Fatalf("holder: %+v %v", res, err)
			}
			f.enqueue(store.NewJob{Local: "order"})
			j := f.claimOne("w")
			fu, err := store.FollowUpEffect(store.FollowUp{Partition: next,
				Job: store.NewJob{Kind: "ship", Payload: []byte("new"), MaxAttempts: 3, Unique: uq}})
			if err != nil {
				t.Fatal(err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: "order@1:#complete", Effects: []sluicetype.Effect{fu}}); r.State != "completed" {
				t.Fatalf("ack: %+v", r)
			}
			entries, err := f.rdb.XRange(f.ctx, f.p.Outbox(), "-", "+").Result()
			if err != nil || len(entries) != 1 {
				t.Fatalf("outbox: %v %v", entries, err)
			}
			if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
				t.Fatal(err)
			}
			cr, err := f.st.Claim(f.ctx, next, store.ClaimRequest{N: 1, Lease: 30 * time.Second, Worker: "w", Nonce: "n1", PromoteLimit: 100})
			if err != nil || len(cr.Jobs) != 1 || string(cr.Jobs[0].Payload) != "new" {
				t.Fatalf("the holder, with the follow-up's payload: %+v %v", cr, err)
			}
			if res, _, err := f.st.Ack(f.ctx, next, []store.Ack{{Lease: lease(cr.Jobs[0]), Code: store.CodeOK}}); err != nil || res[0].State != "completed" {
				t.Fatalf("ack holder: %+v %v", res, err)
			}
			// the same entry, relayed again
			if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: entries[0].Values}).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
				t.Fatal(err)
			}
			follow := keys.Ref{Partition: next, Local: "order@1:#complete:0"}
			if got, _, err := f.st.Get(f.ctx, follow); err == nil {
				t.Fatalf("the follow-up folded into the holder by its first relay was added by the second: %s %q", got.State, got.Payload)
			}
		})
	}
}
