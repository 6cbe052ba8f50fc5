package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/store"
)

// TestClaimManyConcurrencyKeys: a claim, and then an ack, of more jobs
// with distinct concurrency keys than Lua's stack holds values (about
// 8,000 on Redis) reads their counts in parts: it once unpacked every key
// into one HMGET, and the claim raised after its pops had taken the jobs
// off their list. On miniredis, 1,024 jobs, the most a worker claims at
// once (two parts of keys): there, packing the reply of 90 jobs or more
// raised, its leases written (gopher-lua's table.concat puts every part
// on a registry of about 5,100 values). More would only be slow there:
// gopher-lua under -race took over 3 s, go-redis's read timeout, for a
// claim of 8,200.
func TestClaimManyConcurrencyKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		n := 8200
		if b.name == "miniredis" {
			n = 1024
		}
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
