package store_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestClaimPackedReply: a claim answers its jobs packed (lua/lib_pack.lua:
// cmsgpack on a redis-server, the Lua encoder on miniredis), and the
// worker reads back every byte of each: payloads and headers at each of
// msgpack's string sizes (and a payload in its own key), a job's step
// checkpoints (a record too long for msgpack's 16-bit strings, which the
// step commit packs as well), and a batch over the size read in place.
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
			record := filler(70_000, 'r')
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

// TestAckPackedArgs: an ack sends its outcomes' fields packed as one
// argument (store's argList, lua/lib_pack.lua's unpack_args: cmsgpack on a
// redis-server, the Lua decoder on miniredis) and their effects apart; in
// one call, plain completions, completions with results at each of
// msgpack's string sizes, one with an effect and retries between them
// each land on their own job.
func TestAckPackedArgs(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, 31, 32, 255, 256, 65535, 65536, 300_000}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			var jobs []store.NewJob
			for i := range 2 * len(sizes) {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%d", i)})
			}
			f.enqueue(jobs...)
			res := f.claim(len(jobs), "w")
			if len(res.Jobs) != len(jobs) {
				t.Fatalf("claimed %d jobs, want %d", len(res.Jobs), len(jobs))
			}
			var acks []store.Ack
			for i, j := range res.Jobs {
				a := store.Ack{Lease: lease(j), Code: store.CodeOK}
				switch {
				case i%2 == 1:
					a.Code, a.Reason, a.Message = store.CodeRetry, "error", fmt.Sprintf("boom %d", i)
				case i == 4:
					a.Effects, a.Commit = []sluicetype.Effect{fx("INCRBY", f.key("bal"), "5")}, j.Local+":#complete"
				default:
					a.Data = filler(sizes[i/2], 'd')
				}
				acks = append(acks, a)
			}
			got, outboxed, err := f.st.Ack(f.ctx, f.p, acks)
			if err != nil || outboxed != 0 || len(got) != len(acks) {
				t.Fatalf("ack: %d results, %d outboxed, %v", len(got), outboxed, err)
			}
			for i, r := range got {
				want := "completed"
				if i%2 == 1 {
					want = "retryable"
				}
				if r.Err != nil || r.State != want {
					t.Fatalf("ack %d: %+v, want %s", i, r, want)
				}
				j, errs := f.get(res.Jobs[i].Local)
				switch {
				case i%2 == 1:
					if j.Attempt != 1 || len(errs) != 1 || errs[0].Message != fmt.Sprintf("boom %d", i) {
						t.Errorf("job %s: attempt %d, errors %+v; want 1 and its own message", j.Local, j.Attempt, errs)
					}
				case !bytes.Equal(j.Result, acks[i].Data):
					t.Errorf("job %s: result %d bytes, want the %d acked", j.Local, len(j.Result), len(acks[i].Data))
				}
			}
			f.wantValue("bal", "5")
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
