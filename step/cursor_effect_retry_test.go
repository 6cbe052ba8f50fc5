package step_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/sluicetype"
	"github.com/sluicehq/sluice/step"
)

type cursorRetry struct{}

func (cursorRetry) Kind() string { return "cursor_retry" }

// TestCursorFlushAfterEffectError: a cursor checkpoint whose
// effects cannot apply writes nothing and answers an EffectError. The
// handler then saves the same progress without the effect (Flush). That
// commit has no effects at all, so it cannot fail with an effect error:
// it must save the cursor. The step call's ID is a hash of the
// checkpoint's fields but not of its effects (store.checkpoints), so the
// second commit, with the same lease, field, record and commit name, is
// taken for a re-send of the first and answered its recorded
// effect_error (lib_replay.lua) without running.
func TestCursorFlushAfterEffectError(t *testing.T) {
	t.Parallel()
	reg := flow.NewRegistry()
	var firstErr, flushErr atomic.Value
	var resumed atomic.Int64
	resumed.Store(-1)
	register(t, reg, func(ctx context.Context, job *flow.Job[cursorRetry]) error {
		cur, err := step.NewCursor[int](ctx, "rows", 1)
		if err != nil {
			return err
		}
		if job.Attempt > 0 {
			resumed.Store(int64(cur.Value()))
			return nil
		}
		// the key holds a hash: INCRBY cannot apply
		err = cur.Advance(ctx, 1, idempotency.IncrBy(idempotency.SlotKey(ctx, "hash"), 1))
		firstErr.Store(errBox{err})
		// give the effect up, keep the progress
		flushErr.Store(errBox{cur.Flush(ctx)})
		return errors.New("retry to read the cursor back")
	})
	e := newEnv(t, shared.Server.Client(), reg)
	tag := "{" + e.NS + ":default:0}:u:"
	if err := e.RDB.HSet(context.Background(), tag+"hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	e.run(cursorRetry{}, flow.StateCompleted)
	var ee *sluicetype.EffectError
	if first := firstErr.Load().(errBox).err; !errors.As(first, &ee) {
		t.Fatalf("the Advance with a bad effect: %v, want an EffectError", first)
	}
	if err := flushErr.Load().(errBox).err; err != nil {
		t.Fatalf("Flush (no effects) after the failed Advance: %v, want nil", err)
	}
	if got := resumed.Load(); got != 1 {
		t.Fatalf("the next attempt resumed the cursor at %d, want 1 (the flushed progress)", got)
	}
}

type errBox struct{ err error }
