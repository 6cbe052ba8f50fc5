package store_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimResentPastTheStoreKeep: a worker sends a claim whose reply was
// lost again under its ID for up to half its lease, which with a long
// lease outlasts the store's keep of call records (a few minutes). The
// claim's record is kept for its lease, so a re-send four minutes late
// is answered the job the first run leased. With the store's keep, the
// re-send ran as a new claim: the first job stayed leased to no attempt
// (reaped at its lease's end, charged a crash) and the re-send leased
// another under the same lease ID (found by an audit).
func TestClaimResentPastTheStoreKeep(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	f := newFixture(t, backend{"miniredis", rdb})
	f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
	req := store.ClaimRequest{N: 1, Lease: 10 * time.Minute, Worker: "w", Nonce: "n", ID: "c1"}
	first, err := f.st.Claim(f.ctx, f.p, req)
	if err != nil || len(first.Jobs) != 1 {
		t.Fatalf("claim: %+v %v", first, err)
	}
	m.FastForward(4 * time.Minute) // past the store's keep, within the lease's half
	again, err := f.st.Claim(f.ctx, f.p, req)
	if err != nil || len(again.Jobs) != 1 || again.Jobs[0].Local != first.Jobs[0].Local || again.Jobs[0].LeaseID != first.Jobs[0].LeaseID {
		t.Fatalf("re-sent claim: %+v %v; want the first run's job %s again", again, err, first.Jobs[0].Local)
	}
	if s := f.stats(); s["running"] != 1 || s["available"] != 1 {
		t.Fatalf("after the re-send: %v, want one job running, one available", s)
	}
}

// TestClaimRecordKeptForItsLease: on a real Redis, the record of a claim
// with an ID lives as long as its lease when that is longer than the
// store's keep; an ID-less claim's record (none here: nothing to answer)
// and other calls keep the store's.
func TestClaimRecordKeptForItsLease(t *testing.T) {
	t.Parallel()
	c := env.Server.Client()
	t.Cleanup(func() { c.Close() })
	f := newFixture(t, backend{"redis", c})
	f.enqueue(store.NewJob{Local: "a"})
	if res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 1, Lease: time.Hour, Worker: "w", Nonce: "n", ID: "c1"}); err != nil || len(res.Jobs) != 1 {
		t.Fatalf("claim: %+v %v", res, err)
	}
	n := 0
	for iter := f.rdb.Scan(f.ctx, 0, f.p.Call("*"), 100).Iterator(); iter.Next(f.ctx); {
		if ttl := f.rdb.PTTL(f.ctx, iter.Val()).Val(); ttl > 30*time.Minute {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d call records kept over half an hour, want the claim's", n)
	}
}
