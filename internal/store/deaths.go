package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// TakeDeaths takes up to n of p's pending death reports that are due
// (lua/deaths.lua): the jobs that reached archived or quarantined and for
// which no death handler has run, each held for hold so that no other
// worker takes it meanwhile. DoneDeaths drops a report once its handler
// has run; one that is not dropped is due again after hold.
func (s *Store) TakeDeaths(ctx context.Context, p keys.Partition, n int, hold time.Duration) ([]*Job, error) {
	v, err := s.run(ctx, lua.Deaths, p, "take", n, ms(hold)).Slice()
	if err != nil {
		return nil, err
	}
	var out []*Job
	for len(v) > 0 {
		id, _ := v[0].(string)
		flat, rest, err := counted(v[1:])
		if err != nil {
			return out, fmt.Errorf("death report %s: %w", id, err)
		}
		j, err := decodeJob(id, flat)
		if err != nil {
			j = &Job{Local: id, Malformed: err}
		}
		out = append(out, j)
		v = rest
	}
	return out, nil
}

// DoneDeaths drops the pending death reports of jobs of p (their IDs in
// the partition) whose death handler has run.
func (s *Store) DoneDeaths(ctx context.Context, p keys.Partition, locals ...string) error {
	args := []any{"done", len(locals)}
	for _, l := range locals {
		args = append(args, l)
	}
	return s.run(ctx, lua.Deaths, p, args...).Err()
}
