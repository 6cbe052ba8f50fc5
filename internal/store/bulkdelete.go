package store

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/lua"
)

// DeleteStep runs one bounded step (at most limit entries examined) of a
// delete by selector of partition p from cur (lua/bulkdelete.lua): a
// scan of sel.State's zset (scheduled and retryable: the scheduled set;
// a finished state: its terminal set). A selector on scheduled or
// retryable jobs matches by kind only.
func (s *Store) DeleteStep(ctx context.Context, p keys.Partition, sel Selector, cur ScanCursor, limit int, dry bool) (ScanStep, error) {
	asof, d := "", "0"
	if cur.AsOf > 0 {
		asof = strconv.FormatInt(cur.AsOf, 10)
	}
	if dry {
		d = "1"
	}
	v, err := s.run(ctx, lua.BulkDelete, p, sel.State, cur.Score, cur.Member, asof, limit, d,
		sel.Kind, sel.Reason, boundMS(sel.After), boundMS(sel.Before)).Result()
	if err != nil {
		return ScanStep{}, err
	}
	return scanStep("delete", v)
}

// StateSizes reads how many jobs are in state in each of parts, in one
// pipelined round trip: for scheduled and retryable, which share a zset,
// its per-state counter; else the size of its terminal zset. It is a
// bulk action's progress total only, and does not check the data model:
// each partition's scan script refuses a partition at a newer one when
// the action reaches it, after the action did what it could on the
// others (which it reports).
func (s *Store) StateSizes(ctx context.Context, parts []keys.Partition, state string) ([]int64, error) {
	if state != "scheduled" && state != "retryable" {
		return s.TerminalSizes(ctx, parts, state)
	}
	cmds := make([]*redis.StringCmd, len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			cmds[i] = p.HGet(ctx, part.Stats(), state)
		}
		return nil
	})
	if err := pipeError(all); err != nil {
		return nil, err
	}
	out := make([]int64, len(parts))
	for i, c := range cmds {
		out[i], _ = c.Int64() // absent: 0
	}
	return out, nil
}
