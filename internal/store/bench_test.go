package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// BenchmarkStepCommits measures durable steps' commits apart from a
// worker's batching, which varies with the machine's load: b.N jobs are
// claimed, then ten steps of each are committed in calls of 20
// checkpoints (what a worker's step batcher sends at Concurrency 50), so
// the Redis work per step is the same from run to run and
// scripts/redis-ir.sh can compare two versions of step.lua by one run
// each (BenchmarkWorkflow's counts move by a few percent with its
// batches). The timer covers the commits alone.
func BenchmarkStepCommits(b *testing.B) {
	ctx := context.Background()
	rdb := env.Server.Client()
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: redistest.NewNamespace(b), RetainCompleted: time.Hour})
	p := st.Partition("q", 0)
	for left := b.N; left > 0; left -= 1000 {
		jobs := make([]store.NewJob, min(left, 1000))
		for i := range jobs {
			jobs[i] = store.NewJob{Local: "j" + strconv.Itoa(left-i), Kind: "k", Payload: []byte("p"), MaxAttempts: 3}
		}
		if _, err := st.Enqueue(ctx, p, jobs); err != nil {
			b.Fatal(err)
		}
	}
	var leases []store.Lease
	for len(leases) < b.N {
		res, err := st.Claim(ctx, p, store.ClaimRequest{N: 50, Lease: time.Hour, Worker: "w",
			Nonce: "n" + strconv.Itoa(len(leases)), PromoteLimit: 100})
		if err != nil || len(res.Jobs) == 0 {
			b.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
		}
		for _, j := range res.Jobs {
			leases = append(leases, store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence})
		}
	}
	record := []byte{0xc0} // msgpack nil: a step that returns nothing
	b.ResetTimer()
	for step := range 10 {
		field := "step-" + strconv.Itoa(step)
		for i := 0; i < len(leases); i += 20 {
			batch := leases[i:min(i+20, len(leases))]
			cs := make([]store.Checkpoint, len(batch))
			for k, l := range batch {
				// as a worker sends them: its first commit finds the job
				// unmarked
				mode := store.ModeOnceMarked
				if step == 0 {
					mode = store.ModeOnce
				}
				cs[k] = store.Checkpoint{Lease: l, Field: field, Record: record, Mode: mode}
			}
			rs, err := st.Checkpoints(ctx, p, cs)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range rs {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		}
	}
}
