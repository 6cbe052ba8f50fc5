package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimManyConcurrencyKeys: a claim, and then an ack, of more jobs
// with distinct concurrency keys than Lua's stack holds values (about
// 8,000 on Redis, 5,100 on miniredis) reads their counts in parts: it
// once unpacked every key into one HMGET, and the claim raised after its
// pops had taken the jobs off their list. The runtime claims at most
// 1,024 jobs a call; the store takes any number.
func TestClaimManyConcurrencyKeys(t *testing.T) {
	t.Parallel()
	const n = 8200
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			jobs := make([]store.NewJob, n)
			for i := range jobs {
				jobs[i] = store.NewJob{Local: fmt.Sprint("j", i), Kind: "k", Payload: []byte("p"), MaxAttempts: 3,
					Limits: store.Limits{ConcurrencyKey: fmt.Sprint("ck", i), ConcurrencyLimit: 1}}
			}
			if _, err := f.st.Enqueue(f.ctx, f.p, jobs); err != nil {
				t.Fatal(err)
			}
			res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{N: n, Lease: time.Minute, Worker: "w", Nonce: "n", ID: "n", PromoteLimit: 100})
			if err != nil || len(res.Jobs) != n {
				t.Fatalf("claim of %d: %d jobs, %v", n, len(res.Jobs), err)
			}
			acks := make([]store.Ack, n)
			for i, j := range res.Jobs {
				acks[i] = store.Ack{Lease: lease(j), Code: store.CodeOK}
			}
			out, _, err := f.st.Ack(f.ctx, f.p, acks)
			if err != nil || out[n-1].State != "completed" {
				t.Fatalf("ack of %d: %v %+v", n, err, out[n-1])
			}
			f.wantStats(map[string]string{"completed": fmt.Sprint(n), "running": "0", "available": "0"})
		})
	}
}
