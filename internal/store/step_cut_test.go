package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// TestCheckpointsEveryFailedCallMarked: checkpoints the store cuts into
// several calls, which all fail with errors of their own, each carry the
// error Checkpoints returns, the very value: the worker sends again the
// checkpoints whose error is that one (runtime's flushCheckpoints), and a
// later call's would otherwise fail their steps for a network blip.
func TestCheckpointsEveryFailedCallMarked(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	st := store.New(rdb, store.Config{NS: "t", RetainCompleted: time.Hour, RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3})
	p := st.Partition("q", 0)
	const size = 12 << 20 // two records to a call
	var cs []store.Checkpoint
	for i := range 3 {
		cs = append(cs, store.Checkpoint{Lease: store.Lease{Local: fmt.Sprint("j", i), LeaseID: "l", Fence: 1},
			Field: "s", Record: make([]byte, size), Mode: store.ModeOnce, Commit: fmt.Sprint("j", i, ":s")})
	}
	hook := &testkit.FailCalls{Script: lua.Step, Part: p, Distinct: true}
	rdb.AddHook(hook)
	res, err := st.Checkpoints(ctx, p, cs)
	if hook.Calls() < 2 {
		t.Fatalf("%d step calls, want the checkpoints cut into two or more", hook.Calls())
	}
	if err == nil {
		t.Fatal("no error from calls that all failed")
	}
	for i, r := range res {
		if r.Err != err {
			t.Errorf("checkpoint %d: error %v, want the returned one, %v", i, r.Err, err)
		}
	}
}
