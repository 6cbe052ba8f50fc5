package store_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// commitFollowUp completes job local of f.p (enqueued here) with a
// follow-up aimed at partition to, and returns the outbox entry its
// completion wrote, and the follow-up's local ID.
func (f *fixture) commitFollowUp(local string, to keys.Partition) (map[string]any, string) {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: local})
	j := f.claimOne("w")
	if j.Local != local {
		f.t.Fatalf("claimed %s, want %s", j.Local, local)
	}
	fu, err := store.FollowUpEffect(store.FollowUp{Partition: to,
		Job: store.NewJob{Kind: "ship", Payload: []byte("x"), MaxAttempts: 3}})
	if err != nil {
		f.t.Fatal(err)
	}
	commit := local + "@1:#complete"
	if r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: commit, Effects: []sluicetype.Effect{fu}}); r.State != "completed" {
		f.t.Fatalf("ack: %+v", r)
	}
	entries, err := f.rdb.XRevRangeN(f.ctx, f.p.Outbox(), "+", "-", 1).Result()
	if err != nil || len(entries) != 1 {
		f.t.Fatalf("outbox: %v %v", entries, err)
	}
	return entries[0].Values, commit + ":0"
}

// commitElsewhere completes job local of f.p with an INCRBY of key, a
// key in another slot (so relayed through the outbox).
func (f *fixture) commitElsewhere(local, key string, by string) {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: local})
	j := f.claimOne("w")
	if r := f.ack(j, store.Ack{Code: store.CodeOK, Commit: local + "@1:#complete", Effects: []sluicetype.Effect{fx("INCRBY", key, by)}}); r.State != "completed" {
		f.t.Fatalf("ack: %+v", r)
	}
}

// shrink resizes queue from its layout of from partitions to to, as
// admin.ResizeQueue does: the partitions that go away are retired first.
func (f *fixture) shrink(queue string, from, to int) {
	f.t.Helper()
	lay, _, err := f.st.RegisterLayout(f.ctx, queue, from)
	if err != nil || lay.Partitions != from {
		f.t.Fatalf("layout %+v %v", lay, err)
	}
	for i := to; i < from; i++ {
		if err := f.st.Retire(f.ctx, f.st.Partition(queue, i)); err != nil {
			f.t.Fatal(err)
		}
	}
	f.resizeLayout(queue, lay.Version, to)
}

// resizeLayout records queue's layout of n partitions from version,
// holding the queue's resize lock as a resize does.
func (f *fixture) resizeLayout(queue string, version int64, n int) {
	f.t.Helper()
	if ok, err := f.st.LockResize(f.ctx, queue, "test", false); err != nil || !ok {
		f.t.Fatalf("lock: %v %v", ok, err)
	}
	if _, done, err := f.st.ResizeLayout(f.ctx, queue, version, n, "test"); err != nil || !done {
		f.t.Fatalf("resize: %v %v", done, err)
	}
	if err := f.st.UnlockResize(f.ctx, queue, "test"); err != nil {
		f.t.Fatal(err)
	}
}

// holder answers which partitions of queue (of n) hold job local.
func (f *fixture) holders(queue string, n int, local string) []int {
	f.t.Helper()
	var at []int
	for i := range n {
		if _, _, err := f.st.Get(f.ctx, keys.Ref{Partition: f.st.Partition(queue, i), Local: local}); err == nil {
			at = append(at, i)
		}
	}
	return at
}

// TestRetiredFollowUpPlacedAgain: a follow-up aimed at a partition that a
// shrink of its queue retired since its commit is enqueued on a partition
// of the queue's current layout, and the outbox's other entries relay.
// Relayed again (its relayer died before deleting the entry, or an
// operator revived it), it goes to the same partition, whose marker keeps
// it to once: here the job ran and was deleted meanwhile, and nothing is
// enqueued the second time. Before, Enqueue's ErrRetired stopped every
// relay pass at that entry, for good.
func TestRetiredFollowUpPlacedAgain(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.shrink("next", 3, 2)
			entry, local := f.commitFollowUp("order", f.st.Partition("next", 2))
			ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			f.commitElsewhere("other", ledger, "7")

			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || res.Handled != 2 || len(res.Dead) != 0 {
				t.Fatalf("relay: %+v %v, want 2 handled, none dead", res, err)
			}
			if v, _ := f.rdb.Get(f.ctx, ledger).Result(); v != "7" {
				t.Errorf("the other job's relayed effect: %q, want 7", v)
			}
			at := f.holders("next", 3, local)
			if len(at) != 1 || at[0] == 2 {
				t.Fatalf("the follow-up is on partitions %v, want one of 0, 1", at)
			}
			follow := keys.Ref{Partition: f.st.Partition("next", at[0]), Local: local}
			if _, err := f.st.Delete(f.ctx, follow); err != nil { // it ran, and was deleted
				t.Fatal(err)
			}
			f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: entry}) // relayed again
			if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || len(res.Dead) != 0 {
				t.Fatalf("relay again: %+v %v", res, err)
			}
			if at := f.holders("next", 3, local); len(at) != 0 {
				t.Fatalf("the follow-up was enqueued a second time, on partitions %v", at)
			}
			if n, _ := f.rdb.XLen(f.ctx, f.p.Outbox()).Result(); n != 0 {
				t.Errorf("%d entries left in the outbox", n)
			}
		})
	}
}

// TestFollowUpEnqueuedBeforeRetire: a follow-up enqueued on its partition
// before a shrink retired it (the job finished and was deleted, as a shrink
// requires) is not enqueued again, elsewhere, by a later relay of its
// entry: its partition's marker says it applied.
func TestFollowUpEnqueuedBeforeRetire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	if _, _, err := f.st.RegisterLayout(f.ctx, "next", 2); err != nil {
		t.Fatal(err)
	}
	entry, local := f.commitFollowUp("order", f.st.Partition("next", 1))
	if _, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.st.Partition("next", 1), Local: local}); err != nil {
		t.Fatal(err)
	}
	f.shrink("next", 2, 1)
	f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.p.Outbox(), Values: entry})
	if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || len(res.Dead) != 0 || res.Handled != 1 {
		t.Fatalf("relay again: %+v %v", res, err)
	}
	if at := f.holders("next", 2, local); len(at) != 0 {
		t.Fatalf("the follow-up was enqueued a second time, on partitions %v", at)
	}
}

// TestFollowUpDuringShrink: a follow-up aimed at a partition that a shrink
// under way has retired, but whose new count the registry has not yet
// recorded, stays in the outbox (the relay call reports the failure)
// while the entries after it are relayed, and is placed by the new count
// once the resize is recorded.
func TestFollowUpDuringShrink(t *testing.T) {
	t.Parallel()
	f := newFixture(t, backends(t)[1])
	lay, _, err := f.st.RegisterLayout(f.ctx, "next", 2)
	if err != nil {
		t.Fatal(err)
	}
	_, local := f.commitFollowUp("order", f.st.Partition("next", 1))
	if err := f.st.Retire(f.ctx, f.st.Partition("next", 1)); err != nil {
		t.Fatal(err)
	}
	// an effect committed after it, elsewhere: the resize is no matter of
	// its, and it is relayed while the follow-up waits (before, every
	// pass stopped at the follow-up, and a week later both were dead)
	ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
	f.commitElsewhere("other", ledger, "7")
	if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err == nil || len(res.Dead) != 0 {
		t.Fatalf("relay during the shrink: %+v %v, want an error and nothing dead", res, err)
	}
	if v := f.rdb.Get(f.ctx, ledger).Val(); v != "7" {
		t.Fatalf("the effect after the follow-up: ledger %q, want 7 (relayed during the shrink)", v)
	}
	if n, _ := f.rdb.XLen(f.ctx, f.p.Outbox()).Result(); n != 1 {
		t.Fatalf("%d entries in the outbox, want the follow-up's", n)
	}
	f.resizeLayout("next", lay.Version, 1)
	if res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10); err != nil || len(res.Dead) != 0 {
		t.Fatalf("relay after the shrink: %+v %v", res, err)
	}
	if at := f.holders("next", 2, local); len(at) != 1 || at[0] != 0 {
		t.Fatalf("the follow-up is on partitions %v, want [0]", at)
	}
}

// TestUnplaceableFollowUpDeadLettered: a follow-up that will never be
// enqueued is dead-lettered, alone, and the entries after it relay: its
// partition is retired and its queue has no layout to place it by, or its
// partition's keys are corrupt (the enqueue fails with ErrMalformed).
// Before, either stopped every relay pass at that entry.
func TestUnplaceableFollowUpDeadLettered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(f *fixture, to keys.Partition)
		want  string
	}{
		{"retired, no layout", func(f *fixture, to keys.Partition) {
			if err := f.st.Retire(f.ctx, to); err != nil {
				f.t.Fatal(err)
			}
		}, "no layout"},
		{"corrupt partition", func(f *fixture, to keys.Partition) {
			f.rdb.RPush(f.ctx, to.Prefix()+"paused", "x")
		}, "another type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, backends(t)[1])
			to := f.st.Partition("next", 1)
			tc.setup(f, to)
			f.commitFollowUp("order", to)
			ledger := redistest.Elsewhere(f.p.NS, "ledger", f.p.Tag())
			f.commitElsewhere("other", ledger, "7")
			res, err := f.st.RelayOutbox(f.ctx, f.p, "", 10)
			if err != nil || res.Handled != 2 || len(res.Dead) != 1 || res.Dead[0].Job != "order" ||
				!strings.Contains(res.Dead[0].Error, tc.want) {
				t.Fatalf("relay: %+v %v, want the follow-up dead-lettered (%q)", res, err, tc.want)
			}
			if v, _ := f.rdb.Get(f.ctx, ledger).Result(); v != "7" {
				t.Errorf("the other job's relayed effect: %q, want 7", v)
			}
			if n, _ := f.rdb.XLen(f.ctx, f.p.Outbox()).Result(); n != 0 {
				t.Errorf("%d entries left in the outbox", n)
			}
		})
	}
}
