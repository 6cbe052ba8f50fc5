package store_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// fillStream leaves stream an empty stream whose last ID is the greatest
// there is (corrupt data, written by hand): it takes no new entry.
func (f *fixture) fillStream(stream string) {
	f.t.Helper()
	const top = "18446744073709551615-18446744073709551615"
	if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: stream, ID: top, Values: []any{"t", "junk"}}).Err(); err != nil {
		f.t.Fatal(err)
	}
	if err := f.rdb.XDel(f.ctx, stream, top).Err(); err != nil {
		f.t.Fatal(err)
	}
}

// TestStreamThatTakesNoEntry: an outbox (or dead stream) that takes no
// new entry is set aside, as one of another type is, and the call goes on
// with a fresh one. Before, the XADD raised after the call's earlier
// writes (Redis rolls nothing back): a step commit or a completion wrote
// its same-slot effect and nothing else, and each re-send applied it
// again; a relay dead-lettering an entry deleted it from the outbox and
// raised before adding it to the dead stream: lost.
func TestStreamThatTakesNoEntry(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name+"/commit", func(t *testing.T) {
			f := newFixture(t, b)
			f.fillStream(f.p.Outbox())
			j := f.runningJob()
			other := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			c := store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job@1:s",
				Effects: []sluicetype.Effect{fx("INCRBY", f.key("bal"), "5"), fx("INCRBY", other, "7")}}
			for i := range 2 { // the second: a re-send
				if n, err := f.checkpoint(c); err != nil || n != 1 {
					t.Fatalf("commit #%d: %d outboxed, %v", i+1, n, err)
				}
			}
			if v := f.rdb.Get(f.ctx, f.key("bal")).Val(); v != "5" {
				t.Errorf("bal = %q, want 5 (once)", v)
			}
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 1 {
				t.Errorf("%d entries in the fresh outbox, want the other slot's effect", n)
			}
		})
		t.Run(b.name+"/complete", func(t *testing.T) {
			f := newFixture(t, b)
			f.fillStream(f.p.Outbox())
			j := f.runningJob()
			other := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: "job@1:#complete",
				Effects: []sluicetype.Effect{fx("INCRBY", f.key("bal"), "5"), fx("INCRBY", other, "7")}})
			if r.Err != nil || r.State != "completed" {
				t.Fatalf("ack: %+v", r)
			}
			if v := f.rdb.Get(f.ctx, f.key("bal")).Val(); v != "5" {
				t.Errorf("bal = %q, want 5", v)
			}
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 1 {
				t.Errorf("%d entries in the fresh outbox, want the other slot's effect", n)
			}
		})
		t.Run(b.name+"/bury", func(t *testing.T) {
			f := newFixture(t, b)
			bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag())
			f.rdb.RPush(f.ctx, bad, "x") // no INCRBY applies to a list: dead-lettered
			j := f.runningJob()
			if n, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce,
				Commit: "job:s", Effects: []sluicetype.Effect{fx("INCRBY", bad, "5")}}); err != nil || n != 1 {
				t.Fatalf("checkpoint: %d outboxed, %v", n, err)
			}
			f.fillStream(f.p.DeadOutbox())
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 1 {
				t.Fatalf("relay: %+v, %v; want one dead effect", res, err)
			}
			if n := f.rdb.XLen(f.ctx, f.p.DeadOutbox()).Val(); n != 1 {
				t.Errorf("%d entries in the fresh dead stream, want the buried effect", n)
			}
		})
	}
}
