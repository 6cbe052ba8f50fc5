package step

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/mpack"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// Cursor checkpoints the progress of a long loop so that a resumed job
// continues where the last checkpoint left it:
//
//	cur, err := step.NewCursor[int](ctx, "import-rows", 100)
//	if err != nil {
//		return err
//	}
//	for row := cur.Value(); row < total && !cur.Finished(); row++ {
//		if err := importRow(ctx, row); err != nil {
//			return err
//		}
//		if err := cur.Advance(ctx, row+1); err != nil { // a checkpoint every 100 rows
//			return err
//		}
//	}
//	return cur.Finish(ctx)
//
// Every checkpoint is fenced: a stale holder's write is rejected with
// ErrStale. Work done after the last checkpoint runs again on resume.
type Cursor[C any] struct {
	st       *attempt.State
	name     string
	every    int
	pending  int
	value    C
	seq      uint64 // checkpoints saved, in this attempt and before
	finished bool
}

// cursorRecord is a cursor checkpoint. Seq numbers the checkpoints of the
// cursor across attempts, so that each names its commit apart from every
// other, even one of the same value (relayed effects are applied once
// per commit name).
type cursorRecord[C any] struct {
	Value C      `msgpack:"v"`
	Seq   uint64 `msgpack:"n,omitempty"`
}

// NewCursor starts the cursor step name, checkpointing every `every`
// advances (every < 1 means every advance). Value starts at the last
// checkpointed value, or C's zero value.
func NewCursor[C any](ctx context.Context, name string, every int) (*Cursor[C], error) {
	st, ok := attempt.From(ctx)
	if !ok {
		return nil, ErrNoAttempt
	}
	if err := nested(ctx, name); err != nil {
		return nil, err
	}
	_, rec, err := begin(st, name)
	if err != nil {
		return nil, err
	}
	c := &Cursor[C]{st: st, name: name, every: max(every, 1), finished: rec != nil}
	if b, ok := st.Checkpoint(cursorField(name)); ok {
		var r cursorRecord[C]
		if err := decode(b, &r); err != nil {
			return nil, park("stale_checkpoint", fmt.Errorf("%w: cursor %q: %v", ErrStaleCheckpoint, name, err))
		}
		c.value, c.seq = r.Value, r.Seq
	}
	return c, nil
}

// Value is the cursor's current value.
func (c *Cursor[C]) Value() C { return c.value }

// Finished reports that the loop completed (Finish) in an earlier attempt.
func (c *Cursor[C]) Finished() bool { return c.finished }

// Advance moves the cursor to v and checkpoints it every N advances, or at
// once when effects are given: they commit atomically with the checkpoint,
// so a batch's writes happen exactly once.
//
// Each Advance is a boundary between items: once the attempt is known not
// to own the job any more (as for Run, from what the worker knows, without
// a round trip), Advance returns ErrStale and saves nothing, so that the
// loop stops before its next item. It does not look at ctx's cancellation
// (a timeout still saves the progress made): the loop should.
func (c *Cursor[C]) Advance(ctx context.Context, v C, effects ...sluicetype.Effect) error {
	if err := c.st.Owned(ctx); err != nil {
		return err
	}
	c.value = v
	c.pending++
	if c.pending < c.every && len(effects) == 0 {
		return nil
	}
	return c.save(ctx, effects)
}

// Flush checkpoints the current value now.
func (c *Cursor[C]) Flush(ctx context.Context) error {
	if c.pending == 0 {
		return nil
	}
	return c.save(ctx, nil)
}

// Finish marks the loop complete: later attempts see Finished() true.
func (c *Cursor[C]) Finish(ctx context.Context) error {
	if c.finished {
		return nil
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	idx, _ := c.st.Position(c.name)
	b, err := encodeRecord(idx, struct{}{}, nil)
	if err != nil {
		return err
	}
	if err := c.st.Commit(c.name, b, store.ModeOnce, "", nil); err != nil {
		return err
	}
	c.finished = true
	return nil
}

func (c *Cursor[C]) save(ctx context.Context, effects []sluicetype.Effect) error {
	seq := c.seq + 1
	b, err := mpack.Marshal(cursorRecord[C]{Value: c.value, Seq: seq})
	if err != nil {
		return park("step_result", fmt.Errorf("%w: cursor %q: %v", ErrResult, c.name, err))
	}
	if len(b) > MaxResult {
		return park("step_result", fmt.Errorf("%w: cursor %q: %d bytes, the limit is %d", ErrResult, c.name, len(b), MaxResult))
	}
	// The commit name differs per checkpoint (relayed effects are
	// deduplicated by it), and a re-sent checkpoint is the same call
	// (store.Checkpoints).
	commit := c.st.CommitName(c.name + ":@" + strconv.FormatUint(seq, 10))
	if err := c.st.Commit(cursorField(c.name), b, store.ModeCursor, commit, effects); err != nil {
		return err
	}
	c.seq, c.pending = seq, 0
	return nil
}
