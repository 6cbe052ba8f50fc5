package store

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// RunNow makes a scheduled or retryable job available now, everything
// else about it kept (lua/runnow.lua). It returns the job's previous
// state, ErrNotFound, or a *sluicetype.StateError: the job is in another
// state, or is scheduled as a suspended workflow or held behind a
// quarantined job (StateError.Why says which).
func (s *Store) RunNow(ctx context.Context, ref keys.Ref) (string, error) {
	v, err := s.run(ctx, lua.RunNow, ref.Partition, ref.Local).Result()
	if err != nil {
		return "", err
	}
	r, err := strs(v)
	if err != nil || len(r) != 2 {
		return "", fmt.Errorf("%w: run now reply %v", ErrMalformed, v)
	}
	return runNowStatus(ref, r[0], r[1])
}
