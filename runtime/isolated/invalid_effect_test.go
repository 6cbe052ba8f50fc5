package isolated

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/attempt"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// refuseHost is an attempt host whose every checkpoint is refused with err.
type refuseHost struct {
	sendHost
	err error
}

func (h *refuseHost) Send(store.Checkpoint) store.CheckpointResult {
	return store.CheckpointResult{Err: h.err}
}

// TestChildInvalidEffectIsTyped: a step of an isolated child whose effect
// the worker refuses as malformed (an unknown op, no key, bad arguments)
// gets step.ErrInvalidEffect, as the same step in the worker does. Before,
// the child got a plain error (the worker's "anything else" answer), which
// no errors.Is matched, and the worker noted it as a call Redis failed.
func TestChildInvalidEffectIsTyped(t *testing.T) {
	refused := fmt.Errorf("%w: %q on key %q", store.ErrInvalidEffect, "DEL", "k")
	st := attempt.New(nil, keys.Ref{}, store.Lease{}, nil)
	st.Host = &refuseHost{err: refused}
	s := &session{h: &handler{}, st: st, done: context.Background()}
	a := s.commit(checkpointMsg{Seq: 3, Field: "step", Mode: store.ModeOnce, Commit: "c",
		Effects: []sluicetype.Effect{{Op: "DEL", Key: "k"}}})
	err := a.result().Err
	if !errors.Is(err, sluicetype.ErrInvalidEffect) || err.Error() != refused.Error() {
		t.Errorf("the child's error: %v (answer %+v), want %v, matching ErrInvalidEffect", err, a, refused)
	}
	if len(s.failed) != 0 {
		t.Errorf("noted as a failed Redis call: %v", s.failed)
	}
}
