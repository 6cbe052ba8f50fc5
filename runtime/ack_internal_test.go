package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
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

// onAck is a go-redis hook that hands each call of the ack script to the
// function, which sends it on with next or answers it itself; every
// other command passes.
type onAck func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error

func (f onAck) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f onAck) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 2 || !lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		return f(ctx, cmd, next)
	}
}

func (f onAck) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
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
	// every ack call answered WRONGTYPE (a key of another type than Sluice
	// wrote), as a script meeting corrupt data is
	var calls atomic.Int32
	rdb.AddHook(onAck(func(_ context.Context, cmd redis.Cmder, _ redis.ProcessHook) error {
		calls.Add(1)
		err := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
		cmd.SetErr(err)
		return err
	}))
	clk := NewFakeClock(time.Unix(1e9, 0))
	w := &Worker{st: st, clk: clk, longestLease: time.Minute, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan []store.AckResult, 1)
	go func() {
		done <- w.flushAcks(ctx, p, []store.Ack{{Lease: store.Lease{Local: "j", LeaseID: "l", Fence: 1}, Code: store.CodeOK}})
	}()
	select {
	case res := <-done:
		if !errors.Is(res[0].Err, store.ErrMalformed) || calls.Load() != 1 {
			t.Fatalf("result %+v after %d calls, want ErrMalformed after one", res, calls.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("flushAcks retried a malformed answer (%d calls)", calls.Load())
	}
}

// TestFlushAcksLateTryAnsweredCompleted: a completion that ran and
// deleted its job (completed jobs discarded), whose reply was lost, is
// tried again four minutes later, within its lease but past the store's
// keep of call records. The try is answered from the call's record, which
// flushAcks had the store keep for as long as it tries (the acks' Resend,
// else the longest lease): before, the record was gone, and the worker
// reported a lost lease for a job that completed (found by an audit). A
// hand-back (no Resend) batched with an ack of a short lease is tried for
// the longest lease still, not the short one.
func TestFlushAcksLateTryAnsweredCompleted(t *testing.T) {
	type ack struct {
		code   store.Code
		resend time.Duration
		want   string
	}
	for _, c := range []struct {
		name  string
		acks  []ack
		worst time.Duration
	}{
		{"the attempt's resend", []ack{{store.CodeOK, 10 * time.Minute, "completed"}}, time.Minute},
		{"the longest lease", []ack{{store.CodeOK, 0, "completed"}}, 10 * time.Minute},
		{"a hand-back beside a short lease", []ack{{store.CodeRelease, 0, "available"}, {store.CodeOK, time.Millisecond, "completed"}}, 10 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			m := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			defer rdb.Close()
			st := store.New(rdb, store.Config{NS: "t", RetainCompleted: -1, RetainArchived: time.Hour,
				RetainCancelled: time.Hour, CrashLimit: 3})
			p := st.Partition("q", 0)
			var jobs []store.NewJob
			for i := range c.acks {
				jobs = append(jobs, store.NewJob{Local: fmt.Sprint("j", i), Kind: "k", Payload: []byte("x"), MaxAttempts: 3})
			}
			if _, err := st.Enqueue(ctx, p, jobs); err != nil {
				t.Fatal(err)
			}
			res, err := st.Claim(ctx, p, store.ClaimRequest{N: len(jobs), Lease: 10 * time.Minute, Worker: "w", Nonce: "n"})
			if err != nil || len(res.Jobs) != len(jobs) {
				t.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
			}
			// a first ack (of no job) loads the script: the first call the
			// hook sees runs
			if _, _, err := st.Ack(ctx, p, []store.Ack{{Lease: store.Lease{Local: "none", LeaseID: "x", Fence: 1}, Code: store.CodeOK}}); err != nil {
				t.Fatal(err)
			}
			// the first ack call runs in Redis, then Redis's clock moves on
			// four minutes and the reply is lost: the next try comes as one
			// would after Redis was unreachable that long
			calls := 0
			rdb.AddHook(onAck(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				calls++
				if err := next(ctx, cmd); err != nil || calls > 1 {
					return err
				}
				m.FastForward(4 * time.Minute)
				cmd.SetErr(errCut)
				return errCut
			}))
			w := &Worker{st: st, clk: WallClock(), longestLease: c.worst, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			var acks []store.Ack
			for i, a := range c.acks {
				j := res.Jobs[i]
				acks = append(acks, store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: a.code, Resend: a.resend})
			}
			out := w.flushAcks(ctx, p, acks)
			for i, a := range c.acks {
				if calls != 2 || out[i].Err != nil || out[i].State != a.want {
					t.Errorf("%d ack calls, result %d %+v; want the late try answered %s", calls, i, out[i], a.want)
				}
			}
		})
	}
}

// TestAckResendIsTheLeaseLeft: an attempt's ack may be sent again until
// its lease runs out: a lease from now once renewals stop, or later when
// an ExtendLease set a later end; read under the attempt's lock, which
// ExtendLease writes under (found by a review under -race).
func TestAckResendIsTheLeaseLeft(t *testing.T) {
	clk := NewFakeClock(time.Unix(1000, 0))
	w := &Worker{clk: clk}
	a := &Attempt{lease: time.Minute, leaseEnd: clk.Now().Add(20 * time.Second)}
	if got := w.ackResend(a); got != time.Minute {
		t.Errorf("lease end in 20s: %s, want the lease, 1m", got)
	}
	a.leaseEnd = clk.Now().Add(time.Hour) // extended
	if got := w.ackResend(a); got != time.Hour {
		t.Errorf("lease end extended to 1h from now: %s, want 1h", got)
	}
	// a handler that ignored its cancellation may still extend its lease
	// while its attempt concludes (ExtendLease sets both under mu): under
	// -race, a read of either outside mu is reported
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 1000 {
			a.mu.Lock()
			a.lease, a.leaseEnd = time.Duration(i+1)*time.Second, clk.Now().Add(time.Duration(i)*time.Second)
			a.mu.Unlock()
		}
	})
	for range 1000 {
		if got := w.ackResend(a); got <= 0 {
			t.Fatalf("ackResend %s while the lease is extended", got)
		}
	}
	wg.Wait()
}
