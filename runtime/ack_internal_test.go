package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

// failSecondAck is a go-redis hook that fails the second call of the ack
// script before it reaches Redis, once, and keeps the longest argument of
// each ack call.
type failSecondAck struct {
	mu    sync.Mutex
	calls []int
}

var errCut = errors.New("injected: connection reset")

func (h *failSecondAck) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failSecondAck) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 2 || !lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		longest := 0
		for _, a := range args {
			if b, ok := a.([]byte); ok {
				longest = max(longest, len(b))
			}
		}
		h.mu.Lock()
		h.calls = append(h.calls, longest)
		n := len(h.calls)
		h.mu.Unlock()
		if n == 2 {
			cmd.SetErr(errCut)
			return errCut
		}
		return next(ctx, cmd)
	}
}

func (h *failSecondAck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFlushAcksResendsOnlyFailed: acks the store cut into two calls, the
// second of which fails, are retried without the acks of the first: they
// went through, and their call's record, which would answer a re-send,
// lasts a minute where the worker retries for up to a lease (a completion
// already deleted would then answer stale).
func TestFlushAcksResendsOnlyFailed(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: "t", RetainCompleted: -1, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3})
	p := st.Partition("q", 0)
	var jobs []store.NewJob
	for i := range 3 {
		jobs = append(jobs, store.NewJob{Local: fmt.Sprint("j", i), Kind: "k", Payload: []byte("x"), MaxAttempts: 3})
	}
	if _, err := st.Enqueue(ctx, p, jobs); err != nil {
		t.Fatal(err)
	}
	res, err := st.Claim(ctx, p, store.ClaimRequest{N: 3, Lease: time.Minute, Worker: "w", Nonce: "n"})
	if err != nil || len(res.Jobs) != 3 {
		t.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
	}
	const size = 12 << 20 // two acks to a call
	var acks []store.Ack
	for _, j := range res.Jobs {
		acks = append(acks, store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence},
			Code: store.CodeOK, Data: make([]byte, size)})
	}
	// a first ack (of no job) loads the script: the calls counted below
	// are never answered "not loaded"
	if _, _, err := st.Ack(ctx, p, []store.Ack{{Lease: store.Lease{Local: "none", LeaseID: "x", Fence: 1}, Code: store.CodeOK}}); err != nil {
		t.Fatal(err)
	}
	hook := &failSecondAck{}
	rdb.AddHook(hook)
	w := &Worker{st: st, clk: WallClock(), longestLease: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i, r := range w.flushAcks(ctx, p, acks) {
		if r.Err != nil || r.State != "completed" {
			t.Errorf("ack %d: %+v, want completed", i, r)
		}
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.calls) != 3 || hook.calls[2] >= 2*size {
		t.Errorf("ack calls' longest arguments %v; want 3 calls, the retry with the failed ack only (under %d bytes)",
			hook.calls, 2*size)
	}
}

// malformedAcks is a go-redis hook that answers every call of the ack
// script with a WRONGTYPE error (a key of another type than Sluice wrote),
// as a script meeting corrupt data does, and counts the calls.
type malformedAcks struct{ calls int }

func (h *malformedAcks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *malformedAcks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 2 || !lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		h.calls++
		err := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
		cmd.SetErr(err)
		return err
	}
}

func (h *malformedAcks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFlushAcksMalformedIsFinal: an ack call answered with corrupt data
// (store.ErrMalformed) is not retried: the same call would get the same
// answer for a whole lease, holding up its partition's acks. Before, it
// was retried like an unreachable Redis (with this clock, which never
// moves, for ever).
func TestFlushAcksMalformedIsFinal(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: "t", RetainCompleted: -1, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3})
	p := st.Partition("q", 0)
	hook := &malformedAcks{}
	rdb.AddHook(hook)
	clk := NewFakeClock(time.Unix(1e9, 0))
	w := &Worker{st: st, clk: clk, longestLease: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan []store.AckResult, 1)
	go func() {
		done <- w.flushAcks(ctx, p, []store.Ack{{Lease: store.Lease{Local: "j", LeaseID: "l", Fence: 1}, Code: store.CodeOK}})
	}()
	select {
	case res := <-done:
		if !errors.Is(res[0].Err, store.ErrMalformed) || hook.calls != 1 {
			t.Fatalf("result %+v after %d calls, want ErrMalformed after one", res, hook.calls)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("flushAcks retried a malformed answer (%d calls)", hook.calls)
	}
}
