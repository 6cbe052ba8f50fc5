package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestIDsNeverNameAnotherJobsKeys: job IDs may hold ':', so no key of a
// job may be another job's key with a suffix: deleting job inv-1 leaves
// job inv-1:corrupt whole, and a claim that sets aside inv-1's corrupt key
// does not write over it.
func TestIDsNeverNameAnotherJobsKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "inv-1"}, store.NewJob{Local: "inv-1:corrupt"})
			if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "inv-1"}); err != nil {
				t.Fatal(err)
			}
			if j, _ := f.get("inv-1:corrupt"); j == nil || j.State != "available" {
				t.Fatalf("job inv-1:corrupt after deleting inv-1: %+v", j)
			}
			f.rdb.Set(f.ctx, f.p.Job("inv-2"), "garbage", 0) // not a hash
			f.rdb.RPush(f.ctx, f.p.Available(0), "inv-2")
			f.enqueue(store.NewJob{Local: "inv-2:corrupt"})
			f.claim(10, "w")
			if v, _ := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideJob, "inv-2", 1)).Result(); v != "garbage" {
				t.Fatalf("inv-2's corrupt value: %q", v)
			}
			if typ, _ := f.rdb.Type(f.ctx, f.p.Job("inv-2:corrupt")).Result(); typ != "hash" {
				t.Fatalf("job inv-2:corrupt is a %s after the claim set inv-2 aside", typ)
			}
		})
	}
}

// TestSubMillisecondDurations: a positive duration under 1 ms is 1 ms,
// not 0 (which reads as "none"): a timeout of 500µs is a timeout.
func TestSubMillisecondDurations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	f.enqueue(store.NewJob{Local: "a", Timeout: 500 * time.Microsecond, Unique: store.Unique{Key: "u", TTL: 500 * time.Microsecond}})
	if j, _ := f.get("a"); j.Timeout != time.Millisecond {
		t.Fatalf("timeout %v, want 1ms", j.Timeout)
	}
	// PTTL: at most 1 ms left (0: under a millisecond), or gone already
	// (-2); -1 would be a key held with no expiry.
	if ttl, _ := f.rdb.PTTL(f.ctx, f.p.Unique("u")).Result(); ttl > time.Millisecond || ttl == -1 {
		t.Fatalf("unique key held with TTL %v, want at most 1ms", ttl)
	}
}

// TestFollowUpRelayedTwiceEnqueuedOnce: an outbox entry relayed again
// after its follow-up job ran and was deleted (a relay cut after its
// write, or two relays reading one entry) enqueues nothing the second
// time.
func TestFollowUpRelayedTwiceEnqueuedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	next := f.st.Partition("next", 0)
	f.enqueue(store.NewJob{Local: "order"})
	j := f.claimOne("w")
	fx, err := store.FollowUpEffect(store.FollowUp{Partition: next,
		Job: store.NewJob{Kind: "ship", Payload: []byte("x"), MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: "order@1:#complete", Effects: []sluicetype.Effect{fx}})
	if r.State != "completed" {
		t.Fatalf("ack: %+v", r)
	}
	entries, err := f.rdb.XRange(f.ctx, f.p.Outbox(), "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("outbox: %v %v", entries, err)
	}
	if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
		t.Fatal(err)
	}
	follow := keys.Ref{Partition: next, Local: "order@1:#complete:0"}
	if _, err := f.st.Delete(f.ctx, follow); err != nil { // it ran, and was deleted
		t.Fatal(err)
	}
	f.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: f.p.Outbox(), Values: entries[0].Values}) // relayed again
	if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.Get(f.ctx, follow); err == nil {
		t.Fatal("the follow-up was enqueued a second time")
	}
}
