package store

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// CheckpointUnchecked writes one checkpoint whose direct effects go to
// the script as given, without Go's validation (validateEffect), so that
// tests reach the checks lua/lib_effects.lua must make on its own. It
// returns the script's status and detail.
func (s *Store) CheckpointUnchecked(ctx context.Context, p keys.Partition, c Checkpoint) (string, any, error) {
	fields := newArgList(0)
	c.pack(fields)
	args := []any{1, fields.done(), len(c.Effects)}
	for _, e := range c.Effects {
		args = append(args, "d", e.Op, e.Key, len(e.Args))
		for _, a := range e.Args {
			args = append(args, a)
		}
	}
	v, err := s.run(ctx, lua.Step, p, args...).Slice()
	if err != nil {
		return "", nil, err
	}
	pair, _ := v[0].([]any)
	status, _ := pair[0].(string)
	return status, pair[1], nil
}

// MaxCallBytes is maxCallBytes, for tests that cross it.
const MaxCallBytes = maxCallBytes
