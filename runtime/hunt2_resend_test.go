package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// loseDryClaimThenList lets the first claim run in Redis, then, before
// failing its reply (lost past go-redis's retries), has a job listed in
// the partition (env's enqueue) and waits for the wake-up it publishes to
// reach the worker's subscription.
type loseDryClaimThenList struct {
	lost   atomic.Bool
	listed func()
}

func (h *loseDryClaimThenList) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseDryClaimThenList) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *loseDryClaimThenList) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if h.lost.Load() || len(args) < 2 || !lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err
		}
		if !h.lost.CompareAndSwap(false, true) {
			return nil
		}
		h.listed()
		time.Sleep(200 * time.Millisecond) // the wake-up reaches the worker's channel
		cmd.SetErr(testkit.ErrInjected)
		return testkit.ErrInjected
	}
}

// TestHunt2ResentOfferingClaimAnswersStaleDry: a dry claim that made an
// offer is now recorded (claim.lua remember ... or offered), so the same
// claim sent again after its reply was lost (fetch.go failedClaim) answers
// "dry" from the record, however much was listed since. The wake-up for
// a job listed between the first run and the re-send (it deleted the
// offer, so nothing is pushed) reaches the worker during its back-off and
// readies the partition, which the re-send's stale "dry" then un-readies
// again: the listed job waits for IdlePoll (here an hour) while the worker
// sits idle. Before the change a dry claim was not recorded; its re-send
// ran afresh and claimed the job.
func TestHunt2ResentOfferingClaimAnswersStaleDry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	if err := flow.Register(reg, func(ctx context.Context, job *flow.Job[lostClaimArgs]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var id atomic.Value
	hook := &loseDryClaimThenList{}
	hook.listed = func() {
		// a job with an option is listed, not pushed: its wake-up deletes
		// the offer
		id.Store(e.Enqueue(lostClaimArgs{}, flow.WithPriority(2)))
	}
	e.RDB.AddHook(hook)
	e.startWorker(reg, runtime.Options{IdlePoll: time.Hour, MaintenanceInterval: time.Hour, Concurrency: 4})
	deadline := time.Now().Add(5 * time.Second)
	for !hook.lost.Load() || id.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no claim reply was lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	jid := id.Load().(string)
	for time.Now().Before(deadline) {
		if j := e.Job(jid); j != nil && j.State == flow.StateCompleted {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s listed while the worker's claim was being re-sent is %s after 5s; the idle worker missed its wake-up (waits IdlePoll)", jid, e.Job(jid).State)
}
