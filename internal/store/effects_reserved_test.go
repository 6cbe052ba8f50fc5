package store_test

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestEffectsOnSluiceKeysRefused: an effect naming one of Sluice's own
// keys (the job's hash, in its slot; another partition's index or the
// worker registry, relayed through the outbox; a relayed effect's
// marker) is refused with ErrInvalidEffect, and nothing of its commit is
// written: an HSET of the job's hash would have set its state under the
// scripts. A step's commit answers the error; a completion fails its
// own attempt (reason "effect"), as any invalid effect does.
func TestEffectsOnSluiceKeysRefused(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			other := keys.Partition{NS: f.p.NS, Queue: "other", Index: 0}
			mark, _ := keys.EffectMark(f.p.NS, f.key("u:bal"), "job:s:0")
			for _, e := range []sluicetype.Effect{
				fx("HSET", f.p.Job("job"), "st", "completed"),
				fx("INCRBY", f.p.Stats(), "1"),
				fx("ZADD", other.Running(), "1", "x"),
				fx("HSET", keys.Workers{NS: f.p.NS}.Worker("w"), "f", "v"),
				fx("SET", mark, "1"),
			} {
				c := store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "job:s",
					Effects: []sluicetype.Effect{fx("INCRBY", f.key("u:bal"), "1"), e}}
				if _, err := f.checkpoint(c); !errors.Is(err, store.ErrInvalidEffect) {
					t.Errorf("a step's %s of %s: %v, want ErrInvalidEffect", e.Op, e.Key, err)
				}
			}
			if n := exists(t, f, f.key("u:bal"), f.p.Steps("job"), f.p.Outbox()); n != 0 {
				t.Fatalf("refused commits wrote %d keys", n)
			}
			res := f.ack(j, store.Ack{Code: store.CodeOK, Commit: "job:#complete", Delay: 1000,
				Effects: []sluicetype.Effect{fx("HSET", f.p.Job("job"), "st", "completed")}})
			if res.State != "retryable" {
				t.Fatalf("a completion writing its job's hash: %s, want retryable", res.State)
			}
			if _, recs := f.get("job"); len(recs) == 0 || recs[0].Class != "effect" {
				t.Errorf("errors %+v, want an effect error first", recs)
			}
		})
	}
}
