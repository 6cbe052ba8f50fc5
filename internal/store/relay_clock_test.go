package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRelayAgeInStoreTime: an outbox entry's age is reckoned in store
// time, as its ID and its dedup marker's expiry are, not by the relayer's
// clock. Here Redis's clock has gone 10 days on since an effect was
// committed, past the age after which whether it applied can no longer
// be told, while the relayer's clock (the machine's) says it is fresh: it
// is dead-lettered, not applied. Before, the relayer applied it (found by
// an audit); one whose clock ran ahead dead-lettered fresh entries.
func TestRelayAgeInStoreTime(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	now := time.Now().Truncate(time.Millisecond)
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	f, ledger := relayedEffect(t, rdb)
	st := f.st
	m.SetTime(now.Add(10 * 24 * time.Hour))
	res, err := st.RelayOutbox(f.ctx, f.p, "", 10)
	if err != nil || len(res.Dead) != 1 || !strings.Contains(res.Dead[0].Error, "older than") {
		t.Fatalf("relay of an entry 10 days old in store time: %+v %v, want it dead-lettered as too old", res, err)
	}
	if v, _ := rdb.Get(f.ctx, ledger).Result(); v != "" {
		t.Errorf("the too old effect applied: ledger %q", v)
	}
}

// TestRelayAgeOnTheClusterNode: on a cluster, the relay reads the time
// of the node that holds the outbox (a keyless TIME goes to any node,
// whose clock may differ, and which may be down while this one is up):
// a fresh entry relays.
func TestRelayAgeOnTheClusterNode(t *testing.T) {
	t.Parallel()
	rdb := env.Cluster.Client()
	t.Cleanup(func() { rdb.Close() })
	f, ledger := relayedEffect(t, rdb)
	st := f.st
	if res, err := st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || res.Handled != 1 || len(res.Dead) != 0 {
		t.Fatalf("relay: %+v %v, want the entry relayed", res, err)
	}
	if v, _ := rdb.Get(f.ctx, ledger).Result(); v != "3" {
		t.Errorf("the relayed effect: ledger %q, want 3", v)
	}
}

// relayedEffect is a fixture on rdb whose store has no injected clock
// (store time is Redis's TIME, of the node that holds the partition), with
// a job's step committed with one effect on ledger, a key in another slot:
// an outbox entry for the relay.
func relayedEffect(t *testing.T, rdb redis.UniversalClient) (*fixture, string) {
	t.Helper()
	st := store.New(rdb, store.Config{NS: redistest.NewNamespace(t)})
	f := &fixture{t: t, ctx: context.Background(), rdb: rdb, st: st, p: st.Partition("q", 0)}
	j := f.runningJob()
	ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
	if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
		Effects: []sluicetype.Effect{fx("INCRBY", ledger, "3")}}); err != nil {
		t.Fatal(err)
	}
	return f, ledger
}
