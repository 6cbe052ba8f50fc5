package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRelayNotificationRefusedIsItsAlone: a child's notification bound
// for a parent whose partition refuses every call (its data model key
// corrupt) is dead-lettered, and one bound for a partition at a newer
// data model is held; either way the effects behind it are relayed. A
// helper's audit found the notification's failure stopped every pass of
// the child's outbox, for ever: nothing after it relayed, nothing
// dead-lettered.
func TestRelayNotificationRefusedIsItsAlone(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"corrupt model", "newer model"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, backends(t)[1]) // a real redis-server
			par := f.st.Partition("par", 0)
			if mode == "corrupt model" {
				f.rdb.RPush(f.ctx, par.DataModel(), "x")
			} else {
				f.rdb.Set(f.ctx, par.DataModel(), "2", 0)
			}
			f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: []any{
				"t", "n", "p", "par:0:parent1", "s", "spawn", "c", "child1", "st", "completed", "r", ""}})
			ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			f.commitElsewhere("a", ledger, "1")
			f.commitElsewhere("b", ledger, "10")
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if got := f.rdb.Get(f.ctx, ledger).Val(); got != "11" {
				t.Fatalf("ledger %q after the pass (%+v, %v): the effects behind the notification were not relayed", got, res, err)
			}
			left := f.rdb.XLen(f.ctx, f.p.Outbox()).Val()
			if mode == "corrupt model" {
				if err != nil || len(res.Dead) != 1 || left != 0 {
					t.Errorf("pass: %+v, %v, %d entries left; want the notification dead-lettered, nothing left", res, err, left)
				}
			} else if !errors.Is(err, store.ErrNewerDataModel) || len(res.Dead) != 0 || left != 1 {
				t.Errorf("pass: %+v, %v, %d entries left; want the notification held (ErrNewerDataModel), alone", res, err, left)
			}
		})
	}
}

// TestRelayHeldBatchGoesOn: a batch that read only held entries says how
// many it held and where it stopped, and the batch after its last entry
// relays the effect behind them; the held entries stay at the front.
func TestRelayHeldBatchGoesOn(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			par := f.st.Partition("par", 0)
			f.rdb.Set(f.ctx, par.DataModel(), "2", 0)
			for _, c := range []string{"child1", "child2"} {
				f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: []any{
					"t", "n", "p", "par:0:parent1", "s", "spawn", "c", c, "st", "completed", "r", ""}})
			}
			ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			f.commitElsewhere("a", ledger, "1")
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 2)
			if !errors.Is(err, store.ErrNewerDataModel) || res.Handled != 2 || res.Held != 2 || res.Last == "" {
				t.Fatalf("first batch: %+v, %v; want 2 read, 2 held (ErrNewerDataModel), its last ID", res, err)
			}
			if got := f.rdb.Get(f.ctx, ledger).Val(); got != "" {
				t.Fatalf("ledger %q after the held batch, want nothing yet", got)
			}
			res, err = f.st.RelayOutbox(f.ctx, f.p, res.Last, 2)
			if err != nil || res.Handled != 1 || res.Held != 0 {
				t.Errorf("batch after it: %+v, %v; want the effect read, nothing held", res, err)
			}
			if got := f.rdb.Get(f.ctx, ledger).Val(); got != "1" {
				t.Errorf("ledger %q after the batch behind the held ones, want 1", got)
			}
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 2 {
				t.Errorf("outbox holds %d entries, want the 2 held", n)
			}
		})
	}
}

// TestRelayWithoutPermissionHolds: a relay by a process whose Redis user
// may not touch the parent's partition (NOPERM: an ACL for the child's
// queue alone) leaves the notification in the outbox, for a process that
// may, held (as at a newer data model), and dead-letters nothing.
// 3d5567e took any refusal of notify.lua not known to pass for a
// partition that refuses every call for good, and dead-lettered such
// notifications, which can never be revived: TestFanOutRelayAfterWorkerDeath
// found it, when its worker relayed before the test counted the outbox.
func TestRelayWithoutPermissionHolds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1]) // a real redis-server: ACLs
	user, password := "relay-"+f.p.NS, "pw-"+f.p.NS
	root := env.Server.Client()
	t.Cleanup(func() {
		root.Do(context.Background(), "ACL", "DELUSER", user)
		root.Close()
	})
	if err := root.Do(f.ctx, "ACL", "SETUSER", user, "reset", "on", ">"+password,
		"~"+f.p.Tag()+"*", "allchannels", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr(), Username: user, Password: password})
	t.Cleanup(func() { rdb.Close() })
	st := store.New(rdb, store.Config{NS: f.p.NS})
	f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: []any{
		"t", "n", "p", "par:0:parent1", "s", "spawn", "c", "child1", "st", "completed", "r", ""}})
	res, err := st.RelayOutbox(f.ctx, f.p, "", 10)
	if !redis.IsPermissionError(err) || len(res.Dead) != 0 || res.Held != 1 {
		t.Errorf("relay without permission on the parent's partition: %+v, %v; want NOPERM, the notification held, nothing dead-lettered", res, err)
	}
	if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 1 {
		t.Errorf("outbox holds %d entries, want the notification, for a process that may relay it", n)
	}
	if n := f.rdb.XLen(f.ctx, f.p.DeadOutbox()).Val(); n != 0 {
		t.Errorf("dead stream holds %d entries, want none", n)
	}
}
