package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// StateCounts reads the per-state job counters (the stats hash the
// scripts keep) of each partition, in one pipelined round trip (one per
// node on a cluster). A partition with no jobs has an empty map. A
// partition at a newer data model is ErrNewerDataModel (its data model is
// read in the same round trip), a counters key of another type
// ErrMalformed.
func (s *Store) StateCounts(ctx context.Context, parts []keys.Partition) ([]map[string]int64, error) {
	var dm models
	cmds := make([]*redis.MapStringStringCmd, len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			dm.add(ctx, p, part)
			cmds[i] = p.HGetAll(ctx, part.Stats())
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	if err := pipeError(all); err != nil {
		return nil, err
	}
	out := make([]map[string]int64, len(parts))
	for i, c := range cmds {
		m := c.Val()
		out[i] = make(map[string]int64, len(m))
		for state, v := range m {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s count %q in %s", ErrMalformed, state, v, parts[i].Stats())
			}
			out[i][state] = n
		}
	}
	return out, nil
}
