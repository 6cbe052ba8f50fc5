package store_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestDeadEffectsVisible: an effect on a key in another slot that the
// relay cannot apply is dead-lettered, not dropped: the relay reports it,
// the job records it (DeadEffects, an "effect_dead" error), it is listed
// with what it would write, and once its cause is mended it can be sent
// back and applies once. The commit's other effects applied meanwhile.
func TestDeadEffectsVisible(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			bad, good := redistest.Elsewhere(f.p.NS, "list", f.p.Tag()), redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			f.rdb.RPush(f.ctx, bad, "x") // INCRBY cannot apply to a list
			j := f.runningJob()
			fx := []sluicetype.Effect{fx("INCRBY", bad, "5"), fx("INCRBY", good, "7")}
			if n, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s", Effects: fx}); err != nil || n != 2 {
				t.Fatalf("checkpoint: %d outboxed, %v", n, err)
			}
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || res.Handled != 2 || len(res.Dead) != 1 {
				t.Fatalf("relay: %+v %v, want 2 handled, 1 dead", res, err)
			}
			d := res.Dead[0]
			if d.Job != "job" || d.Op != "INCRBY" || d.Key != bad || !strings.Contains(d.Error, "holds a list") || d.ID == "" {
				t.Fatalf("dead effect %+v", d)
			}
			if v, _ := f.rdb.Get(f.ctx, good).Result(); v != "7" {
				t.Errorf("the commit's other relayed effect: %q, want 7", v)
			}
			got, recs := f.get("job")
			if got.DeadEffects != 1 || len(recs) == 0 || recs[0].Class != "effect_dead" {
				t.Fatalf("job: %d dead effects, errors %+v", got.DeadEffects, recs)
			}
			listed, err := f.st.DeadEffects(f.ctx, f.p, "", 10)
			if err != nil || len(listed) != 1 || listed[0].ID != d.ID || listed[0].Key != bad || listed[0].Job != "job" {
				t.Fatalf("listed %+v %v", listed, err)
			}
			if n, _ := f.rdb.XLen(f.ctx, f.p.Outbox()).Result(); n != 0 {
				t.Fatalf("%d entries left in the outbox", n)
			}

			f.rdb.Del(f.ctx, bad) // the cause mended
			// an ID past 64 bits is one XRANGE refuses: it raised, after
			// the entries before it were revived
			errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{"garbage", d.ID, "1-1", "99999999999999999999-0"})
			if err != nil || errs[1] != nil || !errors.Is(errs[0], store.ErrNoDeadEffect) || !errors.Is(errs[2], store.ErrNoDeadEffect) ||
				!errors.Is(errs[3], store.ErrNoDeadEffect) {
				t.Fatalf("revive: %v %v", errs, err)
			}
			if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || res.Handled != 1 || len(res.Dead) != 0 {
				t.Fatalf("relay after revive: %+v %v", res, err)
			}
			if v, _ := f.rdb.Get(f.ctx, bad).Result(); v != "5" {
				t.Errorf("revived effect: %q, want 5", v)
			}
			if listed, _ := f.st.DeadEffects(f.ctx, f.p, "", 10); len(listed) != 0 {
				t.Errorf("still listed: %+v", listed)
			}
		})
	}
}

// TestBuryIntoCorruptDeadStream: a dead stream of another type (corrupt
// data) is set aside when the relay buries into it, and the entries it
// buries are dead-lettered in a new one. Before, the first entry left the
// outbox and the XADD into the dead stream raised: that entry was in
// neither stream, the call failed, the others stayed for ever.
func TestBuryIntoCorruptDeadStream(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag())
			f.rdb.RPush(f.ctx, bad, "x") // INCRBY cannot apply to a list
			dead := f.p.Outbox() + ":dead"
			f.overwrite(dead)
			j := f.runningJob()
			fx := []sluicetype.Effect{fx("INCRBY", bad, "5"), fx("INCRBY", bad, "7")}
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s", Effects: fx}); err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 2 {
				t.Fatalf("relay: %+v %v, want 2 dead", res, err)
			}
			if n := f.rdb.XLen(f.ctx, dead).Val(); n != 2 {
				t.Errorf("the dead stream holds %d entries, want 2", n)
			}
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 0 {
				t.Errorf("%d entries left in the outbox", n)
			}
			if f.rdb.Exists(f.ctx, f.p.Aside(keys.AsideShared, "outbox:dead", 1)).Val() != 1 {
				t.Error("the damaged dead stream was not set aside under x:k:outbox:dead")
			}
		})
	}
}

// TestOutboxOldEntryDeadLettered: an outbox entry older than its dedup
// window is dead-lettered rather than applied, since whether it applied
// before can no longer be told; the entries after it still relay.
func TestOutboxOldEntryDeadLettered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), ID: "1-1", Values: []any{"t", "fx", "b", ""}})
	j := f.runningJob()
	ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
	if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
		Effects: []sluicetype.Effect{fx("INCRBY", ledger, "3")}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
	if err != nil || len(res.Dead) != 1 || res.Dead[0].Entry != "1-1" || !strings.Contains(res.Dead[0].Error, "older than") {
		t.Fatalf("relay: %+v %v", res, err)
	}
	if v, _ := f.rdb.Get(f.ctx, ledger).Result(); v != "3" {
		t.Errorf("the entry after it: %q, want 3", v)
	}
	// it is still as old: sending it back is refused, and it stays dead
	f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.DeadOutbox(), Values: []any{"id", "2-1", "job", "", "error", "x", "b", "blob"}})
	dead, _ := f.st.DeadEffects(f.ctx, f.p, "", 10)
	if errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{dead[len(dead)-1].ID}); err != nil || !errors.Is(errs[0], sluicetype.ErrNoEffectToRelay) {
		t.Fatalf("revive: %v %v, want ErrNoEffectToRelay", errs, err)
	}
	if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 0 {
		t.Errorf("the refused entry went to the outbox (%d entries)", n)
	}
	if after, _ := f.st.DeadEffects(f.ctx, f.p, "", 10); len(after) != len(dead) {
		t.Errorf("%d dead entries after the refusal, want %d", len(after), len(dead))
	}
}

// TestReburiedEntryKeepsFirstID: an entry too old to relay is
// dead-lettered, and each time it is revived it is dead-lettered again,
// however often it goes round: every bury keeps its first outbox ID, from
// which the relay counts its age. Here the entry is a copy of one that
// applied (its relayer died before deleting it); once its dedup marker
// has expired, only the age check keeps it from applying twice.
func TestReburiedEntryKeepsFirstID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	f.clk.mu.Lock()
	f.clk.now = time.Now() // the entry IDs Redis writes are in real time
	f.clk.mu.Unlock()
	j := f.runningJob()
	ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
	if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
		Effects: []sluicetype.Effect{fx("INCRBY", ledger, "5")}}); err != nil {
		t.Fatal(err)
	}
	entries, _ := f.rdb.XRange(f.ctx, f.p.Outbox(), "-", "+").Result()
	if len(entries) != 1 {
		t.Fatalf("outbox: %v", entries)
	}
	if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
		t.Fatal(err)
	}
	if v, _ := f.rdb.Get(f.ctx, ledger).Result(); v != "5" {
		t.Fatalf("ledger %q after the first relay", v)
	}
	// The same entry six and a half days old, as if left by a relayer
	// that died before deleting it (in another partition's outbox, where
	// an old ID can still be written).
	p2 := f.st.Partition("q", 1)
	old := strconv.FormatInt(time.Now().Add(-156*time.Hour).UnixMilli(), 10) + "-0"
	if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: p2.Outbox(), ID: old, Values: entries[0].Values}).Err(); err != nil {
		t.Fatal(err)
	}
	mark, _ := keys.EffectMark(f.p.NS, ledger, "job:s:0")
	res, err := f.st.RelayOutbox(f.ctx, p2, "", 10)
	if err != nil || len(res.Dead) != 1 || !strings.Contains(res.Dead[0].Error, "older than") {
		t.Fatalf("relay: %+v %v, want the entry dead-lettered as too old", res, err)
	}
	f.rdb.Del(f.ctx, mark) // expired, a day after the entry was first too old
	// sent back by a store clock 13 h behind, by which it is 143 h old:
	// the new entry carries the first one's ID
	f.clk.Advance(-13 * time.Hour)
	if errs, err := f.st.ReviveEffects(f.ctx, p2, []string{res.Dead[0].ID}); err != nil || errs[0] != nil {
		t.Fatalf("revive: %v %v", errs, err)
	}
	f.clk.Advance(13 * time.Hour)
	res, err = f.st.RelayOutbox(f.ctx, p2, "", 10)
	if err != nil || len(res.Dead) != 1 || !strings.Contains(res.Dead[0].Error, "older than") {
		t.Fatalf("relay of the revived entry: %+v %v, want it dead-lettered as too old (by its first ID)", res, err)
	}
	// and sent back now, it is refused: the relay would bury it again
	if errs, err := f.st.ReviveEffects(f.ctx, p2, []string{res.Dead[0].ID}); err != nil || !errors.Is(errs[0], sluicetype.ErrNoEffectToRelay) {
		t.Fatalf("revive of the entry too old: %v %v, want ErrNoEffectToRelay", errs, err)
	}
	if v, _ := f.rdb.Get(f.ctx, ledger).Result(); v != "5" {
		t.Fatalf("ledger %q: the effect applied twice", v)
	}
}

// TestOldNotificationDelivered: a child's notification to its parent in
// another partition is delivered however old its outbox entry: delivery
// is idempotent (a child already recorded is not counted again), and a
// dead-lettered notification could never be revived (it holds no
// effect), so the age limit of effects would strand its parent.
func TestOldNotificationDelivered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	f.enqueue(store.NewJob{Local: "P"})
	g := *f
	g.p = f.st.Partition("q", 1)
	g.enqueue(store.NewJob{Local: "c", Parent: &store.ParentRef{Ref: f.ref("P"), Step: "s"}})
	held := g.claimLeases(1, "w")
	if _, _, err := f.st.Ack(f.ctx, g.p, []store.Ack{{Lease: held["c"], Code: store.CodeOK}}); err != nil {
		t.Fatal(err)
	}
	entries, err := f.rdb.XRange(f.ctx, g.p.Outbox(), "-", "+").Result()
	if err != nil || len(entries) != 1 || entries[0].Values["t"] != "n" {
		t.Fatalf("outbox: %v %v", entries, err)
	}
	// the same notification with an ID far older than the effects' limit,
	// in an empty outbox, where such an ID can be written
	old := f.st.Partition("q", 2)
	if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: old.Outbox(), ID: "1-1", Values: entries[0].Values}).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := f.st.RelayOutbox(f.ctx, old, "", 10)
	if err != nil || res.Handled != 1 || len(res.Dead) != 0 {
		t.Fatalf("relay: %+v %v, want the notification delivered", res, err)
	}
	if v, err := f.rdb.HGet(f.ctx, f.p.Kids("P"), "c").Result(); err != nil || !strings.HasPrefix(v, "completed") {
		t.Fatalf("the parent's record of its child: %q %v", v, err)
	}
	if n, _ := f.rdb.XLen(f.ctx, old.Outbox()).Result(); n != 0 {
		t.Errorf("%d entries left in the outbox", n)
	}
}

// TestReviveOnRetiredPartition: a dead effect of a partition a shrink
// retired is not sent back: no worker relays that partition's outbox
// once the shrink is recorded, and ResizeQueue retires a partition before
// it checks that its outbox and dead stream are empty, so a revive that
// followed the retire could move an entry past that check (from the dead
// stream, not yet read, into the outbox, read already). It is refused
// with ErrRetired and left dead, and sent back once the partition is
// taken back.
func TestReviveOnRetiredPartition(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			bad := redistest.Elsewhere(f.p.NS, "list", f.p.Tag())
			f.rdb.RPush(f.ctx, bad, "x") // INCRBY cannot apply to a list
			j := f.runningJob()
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
				Effects: []sluicetype.Effect{fx("INCRBY", bad, "5")}}); err != nil {
				t.Fatal(err)
			}
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res.Dead) != 1 {
				t.Fatalf("relay: %+v %v, want 1 dead", res, err)
			}
			f.rdb.Del(f.ctx, bad) // the cause mended
			if err := f.st.Retire(f.ctx, f.p); err != nil {
				t.Fatal(err)
			}
			errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{res.Dead[0].ID})
			if err != nil || len(errs) != 1 || !errors.Is(errs[0], store.ErrRetired) {
				t.Fatalf("revive on a retired partition: %v %v, want ErrRetired", errs, err)
			}
			if n, _ := f.rdb.XLen(f.ctx, f.p.Outbox()).Result(); n != 0 {
				t.Fatalf("%d entries sent to the retired partition's outbox", n)
			}
			if listed, _ := f.st.DeadEffects(f.ctx, f.p, "", 10); len(listed) != 1 {
				t.Fatalf("dead effects left: %+v, want the one refused", listed)
			}
			if err := f.st.TakeBack(f.ctx, f.p); err != nil {
				t.Fatal(err)
			}
			if errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{res.Dead[0].ID}); err != nil || errs[0] != nil {
				t.Fatalf("revive once taken back: %v %v", errs, err)
			}
			if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || res.Handled != 1 || len(res.Dead) != 0 {
				t.Fatalf("relay after revive: %+v %v", res, err)
			}
			if v, _ := f.rdb.Get(f.ctx, bad).Result(); v != "5" {
				t.Errorf("revived effect: %q, want 5", v)
			}
		})
	}
}
