package store_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimPackedReply: a claim answers its jobs packed (lua/lib_pack.lua:
// cmsgpack on a redis-server, the Lua encoder on miniredis), and the
// worker reads back every byte of each: payloads and headers at each of
// msgpack's string sizes (and a payload in its own key), a job's step
// checkpoints, and a batch that is over the size read in place.
func TestClaimPackedReply(t *testing.T) {
	t.Parallel()
	sizes := []int{1, 31, 32, 255, 256, 65535, 65536, 300_000}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i, n := range sizes {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%d", i), Kind: fmt.Sprintf("kind-%d", n),
					Payload: filler(n, byte('a'+i)), Headers: filler(n/2+1, byte('A'+i))})
			}
			f.enqueue(jobs...)
			res := f.claim(len(sizes)+1, "w")
			if len(res.Jobs) != len(sizes) {
				t.Fatalf("claimed %d jobs, want %d", len(res.Jobs), len(sizes))
			}
			for i, j := range res.Jobs {
				want := jobs[i]
				if j.Local != want.Local || j.Kind != want.Kind || j.Malformed != nil || j.State != "running" ||
					j.Fence != 1 || j.LeaseID == "" || j.LeaseExpiry.IsZero() {
					t.Fatalf("job %d: %s %s fence %d lease %q expiry %v malformed %v; want %s %s fence 1, leased",
						i, j.Local, j.Kind, j.Fence, j.LeaseID, j.LeaseExpiry, j.Malformed, want.Local, want.Kind)
				}
				if !bytes.Equal(j.Payload, want.Payload) || !bytes.Equal(j.Headers, want.Headers) {
					t.Errorf("job %s: payload %d bytes, headers %d; want %d and %d, the bytes enqueued",
						j.Local, len(j.Payload), len(j.Headers), len(want.Payload), len(want.Headers))
				}
			}
			// a step checkpoint comes back with the job's next claim
			j := res.Jobs[2]
			record := filler(300, 'r')
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: record, Mode: store.ModeOnce, Commit: "c"}); err != nil {
				t.Fatal(err)
			}
			for _, j := range res.Jobs {
				if r := f.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "again"}); r.Err != nil {
					t.Fatalf("ack %s: %v", j.Local, r.Err)
				}
			}
			again := f.claim(len(sizes), "w")
			if len(again.Jobs) != len(sizes) {
				t.Fatalf("claimed %d jobs again, want %d", len(again.Jobs), len(sizes))
			}
			for _, j := range again.Jobs {
				if j.Fence != 2 || j.Attempt != 1 {
					t.Errorf("job %s again: fence %d attempt %d, want 2 and 1", j.Local, j.Fence, j.Attempt)
				}
				if j.Local == "j2" && !bytes.Equal(j.Steps["s"], record) {
					t.Errorf("job j2's step s: %d bytes, want the %d committed", len(j.Steps["s"]), len(record))
				}
			}
		})
	}
}

// filler is n bytes counting up from c.
func filler(n int, c byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c + byte(i%7)
	}
	return b
}
