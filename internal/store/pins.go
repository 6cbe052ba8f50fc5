package store

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// IndexPinLists makes sure the partition's index of pin lists
// (keys.Partition.PinWorkers) names every worker that has one, for a
// listing of available jobs (lua/list.lua) to find the jobs pinned to
// each, a gone worker's among them. Pin lists made by an earlier release,
// before the index, are found by one scan of the partition's node and
// indexed by maintain.lua, which marks the index complete (the member
// ""): no process scans for them again. It runs on an operator's listing,
// not in a worker's maintenance: a scan that fails there would stop no
// reaping. A Redis user that may not SCAN (NOPERM) lists what the index
// holds: every pin made by this release.
func (s *Store) IndexPinLists(ctx context.Context, p keys.Partition) error {
	pins, err := s.unindexedPins(ctx, p)
	if redis.IsPermissionError(err) {
		s.pinsIndexed.Store(p.Prefix(), true) // asked again, it would refuse again
		return nil
	}
	if err != nil || pins == nil {
		return err
	}
	if _, err := s.maintain(ctx, p, 0, 0, 0, pins...); err != nil {
		return err
	}
	s.pinsIndexed.Store(p.Prefix(), true)
	return nil
}

// unindexedPins is, for a partition whose index of pin lists is not
// marked complete, the workers whose pin lists a scan of its node finds,
// led by "" (the mark maintain.lua adds). It is nil when the index is
// complete: known so to this process, or marked so in Redis.
func (s *Store) unindexedPins(ctx context.Context, p keys.Partition) ([]any, error) {
	if _, ok := s.pinsIndexed.Load(p.Prefix()); ok {
		return nil, nil
	}
	var node redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		// a keyless SCAN goes to any node: the partition's is its slot's
		n, err := cc.MasterForKey(ctx, p.PinWorkers())
		if err != nil {
			return nil, err
		}
		node = n
	}
	switch err := node.ZScore(ctx, p.PinWorkers(), "").Err(); {
	case err == nil:
		s.pinsIndexed.Store(p.Prefix(), true)
		return nil, nil
	case errors.Is(err, redis.Nil), strings.HasPrefix(err.Error(), "WRONGTYPE"):
		// not marked; an index of another type (corrupt data) is set
		// aside by maintain.lua, and built anew from the scan
	default:
		return nil, err
	}
	prefix := p.Pinned("")
	found := map[string]bool{}
	workers := []any{""} // '' alone: the scan found none (maintain.lua)
	iter := node.Scan(ctx, 0, globEscape(prefix)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		w := strings.TrimPrefix(iter.Val(), prefix)
		if w != "" && !found[w] {
			found[w] = true
			workers = append(workers, w)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	return workers, nil
}

// globEscape escapes the characters a SCAN pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
