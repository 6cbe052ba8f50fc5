package step_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

type transfer struct{ Cents int64 }

func (transfer) Kind() string { return "transfer" }

// TestEffectsApplyOnce: effects in the job's slot and elsewhere (relayed by
// the outbox) apply exactly once although the attempt that committed them
// failed afterwards, and completion effects apply with the completion.
func TestEffectsApplyOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"redis", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			rdb := backendClient(backend)
			reg := flow.NewRegistry()
			var local atomic.Value
			var foreign, done string
			register(t, reg, func(ctx context.Context, job *flow.Job[transfer]) error {
				local.Store(idempotency.SlotKey(ctx, "ledger"))
				err := step.Commit(ctx, "debit",
					idempotency.IncrBy(idempotency.SlotKey(ctx, "ledger"), -job.Args.Cents),
					idempotency.IncrBy(foreign, job.Args.Cents),
				)
				if err != nil {
					return err
				}
				if job.Attempt < 2 {
					return errors.New("crash-free failure after the commit")
				}
				return step.OnComplete(ctx, idempotency.IncrBy(done, 1))
			})
			e := newEnv(t, rdb, reg)
			foreign, done = e.NS+":ledger:bank", e.NS+":completions"
			info := e.run(transfer{Cents: 250}, flow.StateCompleted)
			if info.Attempt != 2 {
				t.Fatalf("attempt %d", info.Attempt)
			}
			e.waitValue(local.Load().(string), "-250")
			e.waitValue(foreign, "250")
			e.waitValue(done, "1")
		})
	}
}

type wrongType struct{}

func (wrongType) Kind() string { return "wrong_type" }

// TestEffectErrorWritesNothing: when one effect cannot apply, none of the
// step's effects and not its checkpoint are written.
func TestEffectErrorWritesNothing(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var runs atomic.Int64
	var sawEffectErr atomic.Bool
	register(t, reg, func(ctx context.Context, job *flow.Job[wrongType]) error {
		err := step.Do(ctx, "pay", func(ctx context.Context) error {
			runs.Add(1)
			return step.Effect(ctx,
				idempotency.IncrBy(idempotency.SlotKey(ctx, "good"), 1),
				idempotency.IncrBy(idempotency.SlotKey(ctx, "hash"), 1),
			)
		})
		var ee *sluicetype.EffectError
		if errors.As(err, &ee) {
			sawEffectErr.Store(true)
		}
		if job.Attempt >= 1 {
			return flow.Skip("gave up")
		}
		return err
	})
	e := newEnv(t, shared.Server.Client(), reg)
	tag := "{" + e.NS + ":default:0}:u:"
	if err := e.RDB.HSet(context.Background(), tag+"hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	e.run(wrongType{}, flow.StateArchived)
	if runs.Load() != 2 || !sawEffectErr.Load() {
		t.Fatalf("step ran %d times (want 2: no checkpoint), effect error seen %v", runs.Load(), sawEffectErr.Load())
	}
	if n, err := e.RDB.Exists(context.Background(), tag+"good").Result(); err != nil || n != 0 {
		t.Fatalf("the good effect was applied (%d, %v)", n, err)
	}
}

type importJob struct{ Rows int }

func (importJob) Kind() string { return "import" }

// TestCursorResumes: a long loop resumes from its last cursor checkpoint;
// effects committed with each checkpoint apply once per batch.
func TestCursorResumes(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var processed atomic.Int64
	var resumedAt atomic.Int64
	var sumKey atomic.Value
	register(t, reg, func(ctx context.Context, job *flow.Job[importJob]) error {
		cur, err := step.NewCursor[int](ctx, "rows", 100)
		if err != nil {
			return err
		}
		if job.Attempt == 1 {
			resumedAt.Store(int64(cur.Value()))
		}
		key := idempotency.SlotKey(ctx, "sum")
		sumKey.Store(key)
		batch := 0
		for row := cur.Value(); row < job.Args.Rows && !cur.Finished(); row++ {
			if job.Attempt == 0 && row == 550 {
				return errors.New("interrupted mid-loop")
			}
			processed.Add(1)
			batch++
			var fx []sluicetype.Effect
			if (row+1)%100 == 0 {
				fx = append(fx, idempotency.IncrBy(key, int64(batch)))
				batch = 0
			}
			if err := cur.Advance(ctx, row+1, fx...); err != nil {
				return err
			}
		}
		return cur.Finish(ctx)
	})
	e := newEnv(t, shared.Server.Client(), reg)
	e.run(importJob{Rows: 1000}, flow.StateCompleted)
	if resumedAt.Load() != 500 || processed.Load() != 1050 {
		t.Fatalf("resumed at %d, processed %d rows; want 500 and 1050", resumedAt.Load(), processed.Load())
	}
	if v, _ := e.RDB.Get(context.Background(), sumKey.Load().(string)).Result(); v != "1000" {
		t.Fatalf("batch effects sum %s, want 1000 (each batch once)", v)
	}
}

type receipt struct{ Order int }

func (receipt) Kind() string { return "receipt" }

type orderPlaced struct{ Order int }

func (orderPlaced) Kind() string { return "order_placed" }

// TestFollowUpOnce: a follow-up job committed with a step is enqueued
// exactly once, although the attempt that committed it failed afterwards.
func TestFollowUpOnce(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var receipts atomic.Int64
	register(t, reg, func(ctx context.Context, job *flow.Job[receipt]) error {
		receipts.Add(1)
		return nil
	})
	register(t, reg, func(ctx context.Context, job *flow.Job[orderPlaced]) error {
		next, err := flow.FollowUp(ctx, receipt{Order: job.Args.Order})
		if err != nil {
			return err
		}
		if err := step.Commit(ctx, "send-receipt", next); err != nil {
			return err
		}
		if job.Attempt == 0 {
			return errors.New("fail after the commit")
		}
		return nil
	})
	e := newEnv(t, shared.Server.Client(), reg)
	e.run(orderPlaced{Order: 7}, flow.StateCompleted)
	// The receipt's handler counts before its job is settled.
	testkit.Until(t, &e.Sig.Settled, nil, "the receipt", func() (bool, string) {
		return receipts.Load() >= 1, fmt.Sprint(receipts.Load(), " receipts")
	})
	if _, err := flow.FollowUp(context.Background(), receipt{}); !errors.Is(err, step.ErrNoAttempt) {
		t.Fatalf("FollowUp outside a job: %v", err)
	}
	// Once the outbox is empty every relayed follow-up has been enqueued:
	// exactly one receipt job may exist, and it has run (its handler counts
	// before its ack lands, so wait for the ack too).
	part := "{" + e.NS + ":default:0}:"
	// Checked after each relay pass, then after each settle: the pass that
	// empties the outbox may come after the receipt's ack, and the ack
	// after it (a check that follows one kind only waited for ever).
	testkit.Until(t, &e.Sig.Relayed, nil, "the outbox relayed", func() (bool, string) {
		n, err := e.RDB.XLen(context.Background(), part+"outbox").Result()
		return err == nil && n == 0, fmt.Sprintf("outbox %d (%v)", n, err)
	})
	var stats map[string]string
	testkit.Until(t, &e.Sig.Settled, nil, "the receipt acked", func() (bool, string) {
		var err error
		stats, err = e.RDB.HGetAll(context.Background(), part+"stats").Result()
		return err == nil && (stats["running"] == "" || stats["running"] == "0"), fmt.Sprintf("stats %v (%v)", stats, err)
	})
	if n := receipts.Load(); n != 1 || stats["completed"] != "2" || (stats["available"] != "" && stats["available"] != "0") {
		t.Fatalf("%d receipts ran, stats %v: want exactly one follow-up", n, stats)
	}
}
