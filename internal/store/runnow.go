package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// RunNow makes a scheduled or retryable job available now, everything
// else about it kept (lua/runnow.lua). It returns the job's previous
// state, ErrNotFound, or a *sluicetype.StateError: the job is in another
// state, or is scheduled as a suspended workflow or held behind a
// quarantined job (StateError.Why says which).
func (s *Store) RunNow(ctx context.Context, ref keys.Ref) (string, error) {
	return s.RunNowOf(ctx, ref, Created{})
}

// RunNowOf is RunNow of the job of ref only if it is the one c names:
// another is a *sluicetype.OtherJobError, one that ran again or was
// redriven since (c.Fence, c.Redrives) a *sluicetype.MovedOnError,
// nothing written.
func (s *Store) RunNowOf(ctx context.Context, ref keys.Ref, c Created) (string, error) {
	lo, hi, idAt := c.args(ref.Local)
	fence, redrives := c.seen()
	v, err := s.run(ctx, lua.RunNow, ref.Partition, ref.Local, lo, hi, idAt, fence, redrives).Result()
	if err != nil {
		return "", err
	}
	r, err := strs(v)
	if err != nil || len(r) != 2 {
		return "", fmt.Errorf("%w: run now reply %v", ErrMalformed, v)
	}
	if r[0] == statusConflict {
		return "", otherJob(ref, r[1])
	}
	if field, ok := strings.CutPrefix(r[0], statusChanged); ok {
		return "", movedOn(ref, field, r[1])
	}
	return runNowStatus(ref, r[0], r[1])
}
