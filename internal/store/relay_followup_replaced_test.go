package store_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestRelayRepeatedFollowUpWhoseArgsWereReplacedIsNotDeadLettered: a
// follow-up with a unique key (OnDuplicate "replace") is relayed, and its
// relayer dies before deleting the outbox entry (here: the XDEL fails).
// A producer then enqueues another job with the same unique key, which
// replaces the pending follow-up's arguments, as "replace" is meant to.
// The next relay pass repeats the entry: the follow-up applied once
// already (its enqueue marker is set), so the entry must simply go. On
// the head, enqueue.lua compares the job's (replaced) payload with the
// follow-up's, answers "conflict", and the relay dead-letters an effect
// that applied: the job is charged an effect_dead error and a dead effect
// is listed that an operator cannot redrive (it conflicts again).
func TestRelayRepeatedFollowUpWhoseArgsWereReplacedIsNotDeadLettered(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			to := f.st.Partition("next", 0)
			uq, local := replaceableFollowUp(t, f, b, to)
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 1 {
				t.Fatalf("outbox holds %d entries after the failed delete, want 1", n)
			}

			// another producer's job with the same unique key replaces the
			// pending follow-up's arguments
			res, err := f.st.Enqueue(f.ctx, to, []store.NewJob{{Local: "later", Kind: "ship", Payload: []byte("second"),
				MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Held || res[0].Existing != local {
				t.Fatalf("replace: %+v %v; want Held by the follow-up %s", res, err, local)
			}

			res2, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || len(res2.Dead) != 0 {
				t.Errorf("relay repeated: %d dead-lettered (%v), %v; want the entry relayed (the follow-up applied before), nothing dead-lettered",
					len(res2.Dead), deadErrors(res2.Dead), err)
			}
			if n := f.rdb.XLen(f.ctx, f.p.DeadOutbox()).Val(); n != 0 {
				t.Errorf("dead stream holds %d entries, want none: the follow-up applied exactly once", n)
			}
			if n := f.rdb.XLen(f.ctx, f.p.Outbox()).Val(); n != 0 {
				t.Errorf("outbox holds %d entries, want none", n)
			}
			if got, recs := f.get("order"); got.DeadEffects != 0 {
				t.Errorf("job order charged %d dead effects (errors %+v), want 0", got.DeadEffects, recs)
			}
		})
	}
}

// deadErrors are the errors of dead effects, for a failure's message.
func deadErrors(ds []store.DeadEffect) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Error
	}
	return out
}

// TestRelayRepeatedPlacedAgainFollowUpWhoseArgsWereReplacedAppliesOnce: as
// above, for a follow-up aimed at a partition a shrink retired, placed
// again by the queue's layout. On the head the repeated relay's conflict
// also deletes the retired partition's placement record; once the queue
// grows back and the dead effect is redriven, the follow-up is enqueued a
// second time, in its first partition.
func TestRelayRepeatedPlacedAgainFollowUpWhoseArgsWereReplacedAppliesOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.shrink("next", 3, 2)
			retired := f.st.Partition("next", 2)
			uq, local := replaceableFollowUp(t, f, b, retired)
			at := f.holders("next", 3, local)
			if len(at) != 1 {
				t.Fatalf("follow-up held by partitions %v after the first relay, want one", at)
			}
			res, err := f.st.Enqueue(f.ctx, f.st.Partition("next", at[0]), []store.NewJob{{Local: "later", Kind: "ship",
				Payload: []byte("second"), MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Held {
				t.Fatalf("replace: %+v %v", res, err)
			}
			if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
				t.Fatalf("relay repeated: %v", err)
			}

			// the queue grows back; whatever was dead-lettered is redriven
			lay, err := f.st.ReadLayout(f.ctx, "next")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.st.TakeBack(f.ctx, retired); err != nil {
				t.Fatal(err)
			}
			f.resizeLayout("next", lay.Version, 3)
			dead, err := f.st.DeadEffects(f.ctx, f.p, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dead {
				if errs, err := f.st.ReviveEffects(f.ctx, f.p, []string{d.ID}); err != nil || errs[0] != nil {
					t.Fatalf("revive: %v %v", errs, err)
				}
			}
			if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
				t.Fatalf("relay after the redrive: %v", err)
			}
			if at := f.holders("next", 3, local); len(at) != 1 {
				t.Errorf("follow-up %s enqueued in partitions %v, want exactly one", local, at)
			}
		})
	}
}

// replaceableFollowUp acks a job "order" with a follow-up of kind "ship"
// to partition to, under unique key order-7 with OnDuplicate "replace",
// and relays it once, failing the delete of its outbox entry (a relayer
// that died there): the follow-up is enqueued, its entry still there. It
// returns the unique key and the follow-up's job ID in to.
func replaceableFollowUp(t *testing.T, f *fixture, b backend, to keys.Partition) (store.Unique, string) {
	t.Helper()
	uq := store.Unique{Key: "order-7", OnDuplicate: "replace"}
	f.enqueue(store.NewJob{Local: "order"})
	j := f.claimOne("w")
	fu, err := store.FollowUpEffect(store.FollowUp{Partition: to,
		Job: store.NewJob{Kind: "ship", Payload: []byte("first"), MaxAttempts: 3, Unique: uq}})
	if err != nil {
		t.Fatal(err)
	}
	commit := "order@1:#complete"
	if r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: commit, Effects: []sluicetype.Effect{fu}}); r.State != "completed" {
		t.Fatalf("ack: %+v", r)
	}
	b.rdb.AddHook(&testkit.FailCommand{Cmd: "xdel", Key: f.p.Outbox(), Fail: 1})
	if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err == nil {
		t.Fatal("first relay: want the injected XDEL failure")
	}
	return uq, commit + ":0"
}
