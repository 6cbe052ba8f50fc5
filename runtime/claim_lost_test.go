package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

type lostClaimArgs struct{}

func (lostClaimArgs) Kind() string { return "lost_claim" }

// loseFirstRun is a go-redis hook that lets the first call of a script
// that Redis runs without error go through, then answers it with an I/O
// error, as a network that lost its reply past go-redis's retries would:
// Redis ran the call, the caller never learns what it did.
type loseFirstRun struct {
	sc   *lua.Script
	done atomic.Bool
}

func (h *loseFirstRun) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseFirstRun) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if h.done.Load() || len(args) < 2 || !h.sc.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err // not run (a function not loaded yet): not this one
		}
		if !h.done.CompareAndSwap(false, true) {
			return nil
		}
		err := errors.New("read tcp: i/o timeout (injected: the reply was lost past go-redis's retries)")
		cmd.SetErr(err)
		return err
	}
}

func (h *loseFirstRun) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestClaimReplyLostChargesNoCrash: a claim that Redis ran but whose reply
// the worker never got (lost past go-redis's retries: a network blip)
// leased the job to an attempt that never runs. The worker must get the
// job back (a claim retried under the same call ID is answered from its
// call record, lua/claim.lua) rather than leave it leased to nobody until
// the lease runs out and the reaper charges it a crash it never had
// (crash_attempt+1, a suspect, quarantined at the crash limit).
func TestClaimReplyLostChargesNoCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	id := e.Enqueue(lostClaimArgs{})
	hook := &loseFirstRun{sc: lua.Claim}
	e.RDB.AddHook(hook)
	start := time.Now()
	e.StartWorker(reg, runtime.Options{Lease: 3 * time.Second, MaintenanceInterval: 200 * time.Millisecond})
	j := e.WaitState(id, flow.StateCompleted)
	if !hook.done.Load() {
		t.Fatal("no claim reply was lost")
	}
	if j.CrashAttempt != 0 {
		t.Errorf("crash_attempt %d after a lost claim reply (completed after %s), want 0: the job never crashed",
			j.CrashAttempt, time.Since(start).Round(time.Millisecond))
	}
}
