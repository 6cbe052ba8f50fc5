package store_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestRerouteOfLetGoWaiterPassesKeysTurn: a concurrency key of limit 1
// runs r; w1 and w2 wait on the key. r completes: the key lets w1 go to
// the shared list (its turn), and w2 waits for w1's slot to be taken and
// freed. An operator then pins w1 to a worker that is gone (sticky.Wait).
// The key runs nothing, and w1 is on a list no live worker reads: w2
// must go on in w1's place (the turn a pinned waiter never holds,
// cc_release), not wait on its key's list for ever.
func TestRerouteOfLetGoWaiterPassesKeysTurn(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			cc := store.Limits{ConcurrencyKey: "k", ConcurrencyLimit: 1}
			f.enqueue(store.NewJob{Local: "r", Limits: cc}, store.NewJob{Local: "w1", Limits: cc},
				store.NewJob{Local: "w2", Limits: cc})
			res := f.claim(10, "worker-a") // leases r, sets w1 and w2 waiting
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "r" {
				t.Fatalf("claimed %v, want r alone", locals(res.Jobs))
			}
			f.ack(res.Jobs[0], store.Ack{Code: store.CodeOK}) // w1 goes to the shared list
			if _, err := f.st.Reroute(f.ctx, f.ref("w1"), store.Sticky{Worker: "gone", Mode: "w"}); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Minute)
			got := f.claim(10, "worker-a")
			if l := locals(got.Jobs); len(l) != 1 || !l["w2"] {
				t.Fatalf("worker A claimed %v, want w2: the key runs nothing and its turn went to a gone worker's list", l)
			}
		})
	}
}
