package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// Minute is what one partition finished during one minute: jobs that
// reached each terminal state, and run times of completed attempts by
// bucket (lua/lib_batch.lua tally: bucket b holds run times in
// [2^(b/4)-1, 2^((b+1)/4)-1) ms).
type Minute struct {
	Finished map[string]int64 // by terminal state
	RunTimes map[int]int64    // by bucket
}

// Minutes reads the minute hashes of partitions parts for unix minutes
// from..to (inclusive), summed over the partitions, in one pipelined round
// trip; the result is indexed by minute - from. A partition at a newer
// data model is ErrNewerDataModel (read in the same round trip), a minute
// key of another type ErrMalformed.
func (s *Store) Minutes(ctx context.Context, parts []keys.Partition, from, to int64) ([]Minute, error) {
	if to < from {
		return nil, nil
	}
	var dm models
	cmds := make([]*redis.MapStringStringCmd, 0, len(parts)*int(to-from+1))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, part := range parts {
			dm.add(ctx, p, part)
			for m := from; m <= to; m++ {
				cmds = append(cmds, p.HGetAll(ctx, part.Minute(m)))
			}
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	if err := pipeError(all); err != nil {
		return nil, err
	}
	out := make([]Minute, to-from+1)
	for i := range out {
		out[i] = Minute{Finished: map[string]int64{}, RunTimes: map[int]int64{}}
	}
	span := int(to - from + 1)
	for i, c := range cmds {
		m := &out[i%span]
		for f, v := range c.Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: minute counter %s = %q", ErrMalformed, f, v)
			}
			if b, ok := strings.CutPrefix(f, "rt:"); ok {
				k, err := strconv.Atoi(b)
				if err != nil {
					return nil, fmt.Errorf("%w: run time bucket %q", ErrMalformed, f)
				}
				m.RunTimes[k] += n
				continue
			}
			m.Finished[f] += n
		}
	}
	return out, nil
}

// PausedFlags reports which of parts are paused (or retired), in one
// pipelined round trip. A partition at a newer data model is
// ErrNewerDataModel (its data model is read in the same round trip): its
// flag may mean something else there.
func (s *Store) PausedFlags(ctx context.Context, parts []keys.Partition) ([]bool, error) {
	var dm models
	cmds := make([]*redis.IntCmd, len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			dm.add(ctx, p, part)
			cmds[i] = p.Exists(ctx, part.Paused())
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	if err := pipeError(all); err != nil {
		return nil, err
	}
	out := make([]bool, len(parts))
	for i, c := range cmds {
		out[i] = c.Val() == 1
	}
	return out, nil
}

// RetiredFlags reports which of parts a shrink retired (Retire), in one
// pipelined round trip, as PausedFlags does. A flag of another type than
// a string (corrupt) is no retirement.
func (s *Store) RetiredFlags(ctx context.Context, parts []keys.Partition) ([]bool, error) {
	var dm models
	cmds := make([]*redis.StringCmd, len(parts))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			dm.add(ctx, p, part)
			cmds[i] = p.Get(ctx, part.Paused())
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	out := make([]bool, len(parts))
	for i, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) && !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			return nil, readError(err)
		}
		out[i] = c.Val() == "r"
	}
	return out, nil
}

// PartitionsBeyond lists the partitions of queue in namespace ns, from
// index n up, that a layout once named: each holds a pause flag (retired
// by a shrink, or paused, taken back by a growth that failed to record
// its layout), where a job or an enqueue's marker from an earlier layout
// may still be (EnqueuedIn); retired says which a shrink retired (they
// take no job). The flags are read 16 at a time (one pipelined round trip
// each) up to the first partition that holds none: a partition of the
// queue is paused before any resize takes it away, and none past the
// last one used has a flag.
func (s *Store) PartitionsBeyond(ctx context.Context, ns, queue string, n int) (parts []keys.Partition, retired []bool, err error) {
	for from := n; from < MaxPartitions; from += 16 {
		chunk := make([]keys.Partition, 0, 16)
		for k := from; k < min(from+16, MaxPartitions); k++ {
			chunk = append(chunk, keys.Partition{NS: ns, Queue: queue, Index: k})
		}
		var dm models
		cmds := make([]*redis.StringCmd, len(chunk))
		_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, part := range chunk {
				dm.add(ctx, p, part)
				cmds[i] = p.Get(ctx, part.Paused())
			}
			return nil
		})
		if err := dm.err(); err != nil {
			return nil, nil, err
		}
		for i, c := range cmds {
			err := c.Err()
			switch {
			case errors.Is(err, redis.Nil):
				return parts, retired, nil
			case err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE"):
				return nil, nil, readError(err)
			}
			parts, retired = append(parts, chunk[i]), append(retired, c.Val() == "r")
		}
	}
	return parts, retired, nil
}

// TerminalSizes reads the size of the zset of terminal state in each of
// parts, in one pipelined round trip. Like StateSizes, whose terminal
// states it reads, it does not check the data model.
func (s *Store) TerminalSizes(ctx context.Context, parts []keys.Partition, state string) ([]int64, error) {
	cmds := make([]*redis.IntCmd, len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			cmds[i] = p.ZCard(ctx, part.Terminal(state))
		}
		return nil
	})
	if err := pipeError(all); err != nil {
		return nil, err
	}
	out := make([]int64, len(parts))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}
