package store_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestAckOfMalformedWaitWritesNothing: a batched ack whose wait outcome
// carries data that is neither a packed list of children nor a count is
// refused, with an error naming the job, before anything is written: the
// batch's other outcome is not applied (Redis does not roll a script
// back), as with a malformed suspend. Before, the script failed on the
// count part way, after the earlier outcome completed its job.
func TestAckOfMalformedWaitWritesNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			res := f.claim(2, "w")
			if len(res.Jobs) != 2 {
				t.Fatalf("claimed %d jobs, want 2", len(res.Jobs))
			}
			_, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{
				{Lease: lease(res.Jobs[0]), Code: store.CodeOK},
				{Lease: lease(res.Jobs[1]), Code: store.CodeWait, Message: "s", Reason: "a", Data: []byte("x")},
			})
			if err == nil || !strings.Contains(err.Error(), "malformed wait") || !strings.Contains(err.Error(), res.Jobs[1].Local) {
				t.Fatalf("ack: %v, want a malformed wait refused, naming %s", err, res.Jobs[1].Local)
			}
			for _, j := range res.Jobs {
				if got, _ := f.get(j.Local); got.State != "running" {
					t.Errorf("%s is %s after the refused batch, want running (nothing written)", j.Local, got.State)
				}
			}
		})
	}
}
