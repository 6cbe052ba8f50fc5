package store

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// LiveRead is what a live dashboard shows of one partition
// (lua/live.lua).
type LiveRead struct {
	Minute   int64             // the store's current minute (Unix ms / 60000)
	Stats    map[string]string // the per-state counters
	Paused   bool
	Finished map[string]string // the current minute's counters
	Previous map[string]string // the minute before's
}

// Live reads partition p's counters, paused flag and current minute's
// finished counts (and the minute before's) in one call.
func (s *Store) Live(ctx context.Context, p keys.Partition) (LiveRead, error) {
	v, err := s.run(ctx, lua.Live, p).Slice()
	if err != nil {
		return LiveRead{}, err
	}
	if len(v) != 5 {
		return LiveRead{}, fmt.Errorf("%w: live reply of %d items", ErrMalformed, len(v))
	}
	minute, ok1 := v[0].(int64)
	paused, ok2 := v[2].(int64)
	stats, err1 := flatMap(v[1])
	fin, err2 := flatMap(v[3])
	prev, err3 := flatMap(v[4])
	if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
		return LiveRead{}, fmt.Errorf("%w: live reply %v", ErrMalformed, v)
	}
	return LiveRead{Minute: minute, Stats: stats, Paused: paused == 1, Finished: fin, Previous: prev}, nil
}

// flatMap reads a script's field, value list.
func flatMap(v any) (map[string]string, error) {
	l, ok := v.([]any)
	if !ok || len(l)%2 != 0 {
		return nil, fmt.Errorf("%w: %T is not a field, value list", ErrMalformed, v)
	}
	m := make(map[string]string, len(l)/2)
	for i := 0; i < len(l); i += 2 {
		f, ok1 := l[i].(string)
		val, ok2 := l[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: field %v = %v", ErrMalformed, l[i], l[i+1])
		}
		m[f] = val
	}
	return m, nil
}
