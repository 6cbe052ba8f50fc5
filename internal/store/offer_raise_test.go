package store_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestEnqueueCorruptBodyOfARepeat: an enqueue call with a new plain job,
// pushed to an idle worker's offer, and a repeat of a job whose body key
// holds another type (corrupt data) raised (payload_of's GET) after the
// push had taken the idle flag and written a lease whose run-index entry
// waited for the end of the call: the offer and the wake-up flag gone,
// the pushed job running with no run-index entry, never reaped (found by
// a review). The repeat is now a conflict, the call completes, the flag
// and the pushed job's lease are whole.
func TestEnqueueCorruptBodyOfARepeat(t *testing.T) {
	t.Parallel()
	for _, b := range offerBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			o := newOffered(t, b)
			big := plain("b")
			big.Payload = []byte(strings.Repeat("x", 4000)) // kept in its body key
			o.enqueue(big)
			// another worker runs it: the lists are empty
			if res := o.claimOffering(5, 2, "w2", "n0"); len(res.Jobs) != 1 {
				t.Fatalf("claim: %+v", res)
			}
			// corrupt data: its body key holds a list
			o.rdb.Del(o.ctx, o.p.Body("b"))
			o.rdb.RPush(o.ctx, o.p.Body("b"), "x")
			if res := o.claimOffering(5, 2, "w", "n1"); !res.Dry || len(res.Jobs) != 0 {
				t.Fatalf("claim of an empty partition: %+v", res)
			}
			before := o.idleFlag()
			if before == "" || before == "1" {
				t.Fatalf("idle flag %q holds no offer", before)
			}
			_, err := o.st.Enqueue(o.ctx, o.p, []store.NewJob{plain("a"), big})
			t.Logf("enqueue of a plain job and a repeat of the corrupt one: %v", err)
			if f := o.idleFlag(); f == "" {
				t.Errorf("idle flag gone after an enqueue call that failed (was %q): the idle worker gets no wake-up for the next listed job", before)
			}
			if _, ok := o.score(o.p.Prefix()+"run", "a"); !ok {
				if j, _ := o.get("a"); j != nil && j.State == "running" {
					t.Errorf("job a left running under a pushed lease with no run-index entry: never reaped")
				}
			}
		})
	}
}
