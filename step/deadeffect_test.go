package step_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

type payout struct{}

func (payout) Kind() string { return "payout" }

// lockedBuffer is a log sink the worker and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDeadEffectNotSilent: a committed effect on a key in another slot
// that Redis refuses is not dropped in silence: the worker logs it at
// error level and calls OnDeadEffect, the job counts it, the client lists
// it, and once its cause is mended a redrive applies it, once.
func TestDeadEffectNotSilent(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var bad, ledger string
	register(t, reg, func(ctx context.Context, job *flow.Job[payout]) error {
		return step.Commit(ctx, "pay", idempotency.IncrBy(bad, 5), idempotency.IncrBy(ledger, 7))
	})
	e := &env{testkit.NewEnv(t, shared.Client(t), flow.ClientOptions{Registry: reg})}
	rdb, c, ctx := e.RDB, e.Client, context.Background()
	home := keys.Partition{NS: e.NS, Queue: "default"}.Tag()
	bad, ledger = redistest.Elsewhere(e.NS, "list", home), redistest.Elsewhere(e.NS, "ledger", home)
	rdb.RPush(ctx, bad, "x") // INCRBY cannot apply to a list
	logs := &lockedBuffer{}
	hooked := make(chan sluicetype.DeadEffect, 1)
	e.StartWorker(reg, runtime.Options{
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		OnDeadEffect: func(_ context.Context, d sluicetype.DeadEffect) { hooked <- d },
	})

	res, err := c.Enqueue(ctx, payout{})
	if err != nil {
		t.Fatal(err)
	}
	d := testkit.Recv(t, hooked, "OnDeadEffect to be called")
	if d.JobID != res.ID || d.Op != "INCRBY" || d.Key != bad || !strings.Contains(d.Error, "holds a list") {
		t.Fatalf("dead effect %+v", d)
	}
	if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "effect dead-lettered") || !strings.Contains(l, d.ID) {
		t.Fatalf("no error log naming it:\n%s", l)
	}
	e.waitValue(ledger, "7") // the commit's other effect applied
	info, err := c.Job(ctx, res.ID)
	if err != nil || info.DeadEffects != 1 {
		t.Fatalf("job: %+v %v", info, err)
	}
	listed, err := admin.New(c).DeadEffects(ctx, "default", 0)
	if err != nil || len(listed) != 1 || listed[0].ID != d.ID {
		t.Fatalf("listed %+v %v", listed, err)
	}
	rdb.Del(ctx, bad)
	if err := admin.New(c).RedriveEffects(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	e.waitValue(bad, "5")
	if listed, _ := admin.New(c).DeadEffects(ctx, "default", 0); len(listed) != 0 {
		t.Fatalf("still listed after redrive: %+v", listed)
	}
}

// TestDeadEffectHookPanics: an OnDeadEffect that panics is logged, as a
// panicking OnDeath or OnStuck is, and the worker goes on: it ended the
// worker's process (the hook ran on the relay's goroutine without a
// recover), every job in flight then reaped as a crash (found by an
// audit).
func TestDeadEffectHookPanics(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var bad string
	register(t, reg, func(ctx context.Context, job *flow.Job[payout]) error {
		return step.Commit(ctx, "pay", idempotency.IncrBy(bad, 5))
	})
	e := &env{testkit.NewEnv(t, shared.Client(t), flow.ClientOptions{Registry: reg})}
	rdb, c, ctx := e.RDB, e.Client, context.Background()
	bad = redistest.Elsewhere(e.NS, "list", keys.Partition{NS: e.NS, Queue: "default"}.Tag())
	rdb.RPush(ctx, bad, "x") // INCRBY cannot apply to a list
	logs := &lockedBuffer{}
	called := make(chan struct{}, 4)
	e.StartWorker(reg, runtime.Options{
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		OnDeadEffect: func(context.Context, sluicetype.DeadEffect) { called <- struct{}{}; panic("hook bug") },
	})
	if _, err := c.Enqueue(ctx, payout{}); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, called, "OnDeadEffect to be called")
	// the worker is alive: it runs the next job, whose effect dead-letters too
	if _, err := c.Enqueue(ctx, payout{}); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, called, "OnDeadEffect to be called for the second job")
	if l := logs.String(); !strings.Contains(l, "dead-effect handler panicked") || !strings.Contains(l, "hook bug") {
		t.Fatalf("no log of the hook's panic:\n%s", l)
	}
}
