package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimRecordKeptForItsLongestLease: a claim sent under an ID keeps
// its record (for a re-send after a lost reply) as long as the longest
// lease it made: an hour for a job of a kind leased for an hour, and the
// store's keep (minutes) for a claim of 30 s leases alone, however long the
// worker's longest kind lease (a record per claim kept an hour would fill
// Redis with the claims of every worker).
func TestClaimRecordKeptForItsLongestLease(t *testing.T) {
	for _, b := range backends(t)[:2] {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			kinds := map[string]time.Duration{"long": time.Hour}
			keptFor := func(kind, id string) time.Duration {
				t.Helper()
				f.enqueue(store.NewJob{Local: id, Kind: kind})
				res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: 1, Lease: 30 * time.Second, KindLease: kinds,
					Worker: "w", Nonce: id, ID: id})
				if err != nil || len(res.Jobs) != 1 {
					t.Fatalf("claim of %s: %+v %v", id, res, err)
				}
				keys, err := f.rdb.Keys(f.ctx, f.p.Prefix()+"rc:*").Result()
				if err != nil {
					t.Fatal(err)
				}
				var ttl time.Duration
				for _, k := range keys {
					d := f.rdb.PTTL(f.ctx, k).Val()
					f.rdb.Del(f.ctx, k)
					ttl = max(ttl, d)
				}
				return ttl
			}
			if d := keptFor("long", "a"); d < 59*time.Minute {
				t.Errorf("a claim that leased a job for an hour keeps its record %v, want an hour", d)
			}
			if d := keptFor("short", "b"); d <= 0 || d > 10*time.Minute {
				t.Errorf("a claim of 30 s leases keeps its record %v, want the store's keep (minutes at most), not the long kind's hour", d)
			}
		})
	}
}
