package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// ErrStepDone: the step already has a checkpoint; nothing was written.
var ErrStepDone = errors.New("sluice: step already checkpointed")

// Checkpoint modes.
const (
	ModeOnce   = "once"   // a step: the first checkpoint stays
	ModeCursor = "cursor" // a cursor: each checkpoint replaces the last
)

// Checkpoint is one step commit of a running attempt.
type Checkpoint struct {
	Lease
	Field   string // step name, or cursor field
	Record  []byte
	Mode    string
	Commit  string // unique name of this commit, for relayed effects
	Effects []Effect
}

// Checkpoint records a step and applies its effects in one round trip. It
// returns how many outbox entries it wrote; ErrStale, ErrStepDone or an
// *EffectError when nothing was written.
func (s *Store) Checkpoint(ctx context.Context, p keys.Partition, c Checkpoint) (int, error) {
	args := []any{c.Local, c.LeaseID, c.Fence, c.Field, c.Record, c.Mode}
	args, err := s.appendEffects(args, p, c.Commit, c.Effects)
	if err != nil {
		return 0, err
	}
	v, err := s.run(ctx, lua.Step, p, args...).Slice()
	if err != nil {
		return 0, err
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("%w: step reply %v", ErrMalformed, v)
	}
	status, _ := v[0].(string)
	switch status {
	case "ok":
		n, _ := v[1].(int64)
		return int(n), nil
	case "stale":
		return 0, ErrStale
	case "exists":
		return 0, ErrStepDone
	case "effect_error":
		msg, _ := v[1].(string)
		return 0, &EffectError{Msg: msg}
	}
	return 0, fmt.Errorf("%w: step status %q", ErrMalformed, status)
}
