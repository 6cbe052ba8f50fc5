package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
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

// TestLargeBatchesCut: a batch whose items pack to more than
// store.MaxCallBytes goes in several calls, none with a packed argument
// over it (Redis refuses one over proto-max-bulk-len, 512 MB by default,
// by closing the connection), and every item lands: enqueue, step
// commits and acks of three 12 MiB items each take two calls.
func TestLargeBatchesCut(t *testing.T) {
	t.Parallel()
	// 36 MiB a call: on a loaded machine a read took past go-redis's
	// default timeout of 3 s, which is no subject of this test
	rdb := redis.NewClient(&redis.Options{Addr: env.Server.Addr(), ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer rdb.Close()
	for _, sc := range []*lua.Script{lua.Enqueue, lua.Step, lua.Ack} { // no call answered "not loaded"
		if err := sc.Load(context.Background(), rdb); err != nil {
			t.Fatal(err)
		}
	}
	sizes := &argSizes{calls: map[string]int{}}
	rdb.AddHook(sizes)
	f := newFixture(t, backend{"redis", rdb})
	const n, size = 3, 12 << 20
	var jobs []store.NewJob
	for i := range n {
		jobs = append(jobs, store.NewJob{Local: fmt.Sprintf("j%d", i), Payload: filler(size, byte('a'+i))})
	}
	f.enqueue(jobs...)
	res := f.claim(n, "w")
	if len(res.Jobs) != n {
		t.Fatalf("claimed %d jobs, want %d", len(res.Jobs), n)
	}
	var cs []store.Checkpoint
	var acks []store.Ack
	for i, j := range res.Jobs {
		if !bytes.Equal(j.Payload, jobs[i].Payload) {
			t.Fatalf("job %s: payload of %d bytes, want the %d enqueued", j.Local, len(j.Payload), size)
		}
		cs = append(cs, store.Checkpoint{Lease: lease(j), Field: "s", Record: filler(size, 'r'), Mode: store.ModeOnce, Commit: "c"})
		acks = append(acks, store.Ack{Lease: lease(j), Code: store.CodeOK, Data: filler(size, byte('A'+i))})
	}
	rs, _ := f.st.Checkpoints(f.ctx, f.p, cs)
	for i, r := range rs {
		if r.Err != nil {
			t.Fatalf("checkpoint %d: %v", i, r.Err)
		}
	}
	got, _, err := f.st.Ack(f.ctx, f.p, acks)
	if err != nil || len(got) != n {
		t.Fatalf("ack: %+v, %v", got, err)
	}
	for i, r := range got {
		if r.Err != nil || r.State != "completed" {
			t.Fatalf("ack %d: %+v, want completed", i, r)
		}
		if j, _ := f.get(res.Jobs[i].Local); !bytes.Equal(j.Result, acks[i].Data) {
			t.Errorf("job %s: result of %d bytes, want the %d acked", j.Local, len(j.Result), size)
		}
	}
	sizes.mu.Lock()
	defer sizes.mu.Unlock()
	for _, name := range []string{"enqueue", "step", "ack"} {
		if sizes.calls[name] != 2 {
			t.Errorf("%s: %d calls, want 2", name, sizes.calls[name])
		}
	}
	if sizes.max > store.MaxCallBytes {
		t.Errorf("a call packed %d bytes into one argument, over %d", sizes.max, store.MaxCallBytes)
	}
}

// argSizes is a go-redis hook that counts the calls of the scripts that
// take packed arguments and keeps the longest argument any of them had.
type argSizes struct {
	mu    sync.Mutex
	calls map[string]int
	max   int
}

func (h *argSizes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *argSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	scripts := map[string]*lua.Script{"enqueue": lua.Enqueue, "step": lua.Step, "ack": lua.Ack}
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		for name, sc := range scripts {
			if len(args) > 1 && sc.Is(cmd.Name(), fmt.Sprint(args[1])) {
				h.mu.Lock()
				h.calls[name]++
				for _, a := range args {
					if b, ok := a.([]byte); ok {
						h.max = max(h.max, len(b))
					}
				}
				h.mu.Unlock()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *argSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestAckCutCallFails: when one call of an ack cut in several fails, the
// acks of the calls before it stand and the rest carry its error (the
// worker retries them all; the calls that went through answer from their
// records, TestResend).
func TestAckCutCallFails(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	defer rdb.Close()
	f := newFixture(t, backend{"redis", rdb})
	const n, size = 3, 12 << 20
	f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
	res := f.claim(n, "w")
	var acks []store.Ack
	for _, j := range res.Jobs {
		acks = append(acks, store.Ack{Lease: lease(j), Code: store.CodeOK, Data: filler(size, 'd')})
	}
	if err := lua.Ack.Load(f.ctx, rdb); err != nil { // the first call is the first chunk's
		t.Fatal(err)
	}
	rdb.AddHook(&testkit.FailCalls{Script: lua.Ack, Part: f.p, Pass: 1})
	got, _, err := f.st.Ack(f.ctx, f.p, acks)
	if !errors.Is(err, testkit.ErrInjected) || len(got) != n {
		t.Fatalf("ack: %+v, %v; want the injected error and a result per ack", got, err)
	}
	for i, r := range got {
		want := "completed"
		if i == n-1 {
			want = ""
		}
		if r.State != want || (i == n-1) != errors.Is(r.Err, testkit.ErrInjected) {
			t.Errorf("ack %d: %+v, want state %q (the injected error on the last)", i, r, want)
		}
	}
}
