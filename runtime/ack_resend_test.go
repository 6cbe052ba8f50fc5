package runtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// ackKeeps is a go-redis hook that keeps how long each ack call asks its
// record to be kept (the call ID's suffix, lua/lib_replay.lua), once per
// call ID (a call sent again, as after "not loaded", is the same call).
type ackKeeps struct {
	mu    sync.Mutex
	ids   map[string]bool
	keeps []time.Duration
}

func (h *ackKeeps) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *ackKeeps) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) >= 2 && lua.Ack.Is(cmd.Name(), fmt.Sprint(args[1])) {
			id := fmt.Sprint(args[len(args)-1])
			_, keep, _ := strings.Cut(id, "~")
			ms, _ := strconv.ParseInt(keep, 10, 64)
			h.mu.Lock()
			if !h.ids[id] {
				h.ids[id] = true
				h.keeps = append(h.keeps, time.Duration(ms)*time.Millisecond)
			}
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *ackKeeps) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestAckRecordKeptForTheLease: a worker sends an ack whose reply was lost
// again until its attempt's lease runs out, so the ack's call record is
// kept that long. With a lease of ten minutes, longer than the store's keep
// of a few, a try after the store's keep of a completion that ran and
// deleted its job is then answered completed, not stale (the store's
// TestAckResentPastTheStoreKeep shows that answer). An attempt of a kind
// with a short lease on the same worker keeps the store's keep: its
// record is not held for another kind's lease.
func TestAckRecordKeptForTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[workArgs]) error { return nil }))
	testkit.Must(t, flow.Register(reg, func(context.Context, *flow.Job[slowArgs]) error { return nil }))
	hook := &ackKeeps{ids: map[string]bool{}}
	e.RDB.AddHook(hook)
	e.startWorker(reg, runtime.Options{Lease: 30 * time.Second, KindLease: map[string]time.Duration{"work": 10 * time.Minute}})
	e.WaitState(e.Enqueue(slowArgs{N: 1}), flow.StateCompleted) // one after the other: an ack call each
	e.WaitState(e.Enqueue(workArgs{N: 1}), flow.StateCompleted)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.keeps) != 2 || hook.keeps[0] >= 5*time.Minute || hook.keeps[1] < 10*time.Minute {
		t.Fatalf("ack calls kept their records %v; want the store's keep (under 5m) for the 30s lease, then 10m at least", hook.keeps)
	}
}
