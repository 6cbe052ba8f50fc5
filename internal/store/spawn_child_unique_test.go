package store_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestSpawnedChildArgsNeverReplaced: a Spawn run again (its checkpoint
// lost) enqueues its children again under the same IDs (Relayed, origin
// 'f'), and enqueue.lua compares a child still there by its content. A
// unique key's OnDuplicate "replace" could make that a false conflict only
// if it could change a child's arguments, and it cannot: Spawn refuses a
// child with a unique key (flow TestSpawnRefusesUniqueChildren), and
// on_duplicate replaces a holder's arguments only while the holder's own
// unique field is the key (lib_enqueue.lua). Here another producer's
// "replace" under a key that names the child (as a key with a TTL names
// the ID of the job that took it) leaves the child as it was, and the
// child's enqueue repeated is a duplicate, no conflict.
func TestSpawnedChildArgsNeverReplaced(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			child := store.NewJob{Local: "parent@1~charge~0", Kind: "ship", Payload: []byte("first"), MaxAttempts: 3, Relayed: true}
			spawn := func(what string, want store.EnqueueStatus) {
				t.Helper()
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{child})
				if err != nil || res[0].Status != want {
					t.Fatalf("%s: %+v %v; want status %d", what, res, err, want)
				}
			}
			spawn("spawn", store.Added)
			uq := store.Unique{Key: "charge-7", OnDuplicate: "replace"}
			// a producer's job with a unique key of its own: a job of its own
			res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "other", Kind: "ship", Payload: []byte("second"),
				MaxAttempts: 3, Unique: uq}})
			if err != nil || res[0].Status != store.Added {
				t.Fatalf("producer: %+v %v", res, err)
			}
			// a key that names the child: its holder is left as it is
			if err := f.rdb.Set(f.ctx, f.p.Unique("charge-8"), child.Local, 0).Err(); err != nil {
				t.Fatal(err)
			}
			res, err = f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "third", Kind: "ship", Payload: []byte("third"),
				MaxAttempts: 3, Unique: store.Unique{Key: "charge-8", OnDuplicate: "replace"}}})
			if err != nil {
				t.Fatalf("producer under the child's key: %+v %v", res, err)
			}
			if got, _ := f.get(child.Local); string(got.Payload) != "first" {
				t.Fatalf("child's payload %q after the producers' replace, want %q", got.Payload, "first")
			}
			spawn("spawn run again", store.Duplicate)
		})
	}
}
