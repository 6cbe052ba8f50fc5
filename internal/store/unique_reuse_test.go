package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestUniqueTTLReusedID: a unique key with a TTL outlives its job (by
// design: held for its TTL by a job finished and deleted since too). A
// new job that reused the ID, and does not hold the key, is not the
// key's holder: a duplicate of the key with OnDuplicate replace or
// debounce leaves it as it is. A helper's audit found the duplicate
// rewrote its payload or moved its run time.
func TestUniqueTTLReusedID(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, policy := range []string{"replace", "debounce"} {
			t.Run(b.name+"/"+policy, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "x", Unique: store.Unique{Key: "u", TTL: time.Hour}})
				f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
				if _, err := f.st.Delete(f.ctx, f.ref("x")); err != nil {
					t.Fatal(err)
				}
				// the ID reused by a job with no unique key, due in 10 minutes
				f.enqueue(store.NewJob{Local: "x", Payload: []byte("mine"), Delay: 10 * time.Minute})
				res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: "y", Kind: "k", Payload: []byte("dup"), MaxAttempts: 3,
					Delay: 30 * time.Minute, Unique: store.Unique{Key: "u", TTL: time.Hour, OnDuplicate: policy}}})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("duplicate: %+v", res[0])
				j, _ := f.get("x")
				if string(j.Payload) != "mine" {
					t.Errorf("job x (no unique key) had its payload replaced by a duplicate of key u: %q", j.Payload)
				}
				if at, _ := f.due("x"); int64(at) != epoch.Add(10*time.Minute).UnixMilli() {
					t.Errorf("job x (no unique key) had its run time moved by a duplicate of key u: due %v, want %v",
						time.UnixMilli(int64(at)).UTC(), epoch.Add(10*time.Minute))
				}
			})
		}
	}
}
