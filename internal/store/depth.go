package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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

// Contents is what a partition holds, as PartitionContents reads it.
type Contents struct {
	// Counts is the per-state job counters (StateCounts).
	Counts map[string]int64
	// Outbox and Dead are the lengths of the outbox and of the dead
	// outbox (OutboxSizes).
	Outbox, Dead int64
	// Indexes is the entries of each of the partition's indexes that
	// holds any, by the key's name after the partition's prefix: the
	// ready lists (avail:0..9), sched, later (buckets), run (the anchor
	// not counted), the terminal zsets (completed, archived, quarantined,
	// cancelled), cwn (concurrency keys with waiting jobs), rwake (jobs
	// waiting on the rate classes it lists) and pinx (pinned jobs with a
	// fallback or a deadline, waiters of a concurrency key or rate class
	// with a deadline). later counts the entries of its buckets whose job
	// exists, not buckets, and pinx its jobs that exist: these indexes
	// keep entries of jobs gone until they come due (liveLazy).
	Indexes map[string]int64
}

// contentIndex is one of a partition's indexes PartitionContents reads:
// its key, and the command that counts its entries.
type contentIndex struct {
	key   string
	count func(ctx context.Context, p redis.Pipeliner, key string) *redis.IntCmd
}

// contentIndexes are part's indexes PartitionContents reads: the ready
// lists, sched, later, run, the terminal zsets, cwn, rwake and pinx.
func contentIndexes(part keys.Partition) []contentIndex {
	llen := func(ctx context.Context, p redis.Pipeliner, k string) *redis.IntCmd { return p.LLen(ctx, k) }
	hlen := func(ctx context.Context, p redis.Pipeliner, k string) *redis.IntCmd { return p.HLen(ctx, k) }
	zcard := func(ctx context.Context, p redis.Pipeliner, k string) *redis.IntCmd { return p.ZCard(ctx, k) }
	var out []contentIndex
	for i := range keys.Priorities {
		out = append(out, contentIndex{part.Available(i), llen})
	}
	for _, k := range []string{part.Sched(), part.Later(), part.Running(), part.Terminal("completed"),
		part.Terminal("archived"), part.Terminal("quarantined"), part.Terminal("cancelled"),
		part.RateWake(), part.PinDeadlines()} {
		out = append(out, contentIndex{k, zcard})
	}
	return append(out, contentIndex{part.ConcurrencyWaiting(), hlen})
}

// PartitionContents reads, for each of parts, its per-state counters,
// its outbox sizes and the sizes of its own indexes, in one pipelined
// round trip (one per node on a cluster), and two or three more for
// partitions with lazy index entries (liveLazy), of cheap commands (HGETALL of
// the counters, XLEN, LLEN, ZCARD, HLEN; no scan of the keyspace): what
// a shrink must find empty before it takes a partition away. The
// indexes are read as well as the counters, which a key deleted or
// damaged by hand can make say nothing of jobs still listed. A
// partition at a newer data model is ErrNewerDataModel, a key of
// another type ErrMalformed naming it. A worker's pin list of a job
// pinned with no fallback (sticky mode 'w') is named by the worker, so
// is not read: such a job is in the counters only.
func (s *Store) PartitionContents(ctx context.Context, parts []keys.Partition) ([]Contents, error) {
	var dm models
	type read struct {
		stats        *redis.MapStringStringCmd
		outbox, dead *redis.IntCmd
		index        []*redis.IntCmd
		anchor       *redis.FloatCmd
	}
	reads := make([]read, len(parts))
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			dm.add(ctx, p, part)
			r := &reads[i]
			r.stats = p.HGetAll(ctx, part.Stats())
			r.outbox = p.XLen(ctx, part.Outbox())
			r.dead = p.XLen(ctx, part.DeadOutbox())
			for _, ix := range contentIndexes(part) {
				r.index = append(r.index, ix.count(ctx, p, ix.key))
			}
			r.anchor = p.ZScore(ctx, part.Running(), keys.RunAnchor)
		}
		return nil
	})
	if err := dm.err(); err != nil {
		return nil, err
	}
	out := make([]Contents, len(parts))
	for i, r := range reads {
		part := parts[i]
		named := func(key string, err error) error {
			return fmt.Errorf("%w (%s)", readError(err), key)
		}
		if err := r.stats.Err(); err != nil {
			return nil, named(part.Stats(), err)
		}
		c := Contents{Counts: map[string]int64{}, Indexes: map[string]int64{}}
		for state, v := range r.stats.Val() {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s count %q in %s", ErrMalformed, state, v, part.Stats())
			}
			c.Counts[state] = n
		}
		if err := r.outbox.Err(); err != nil {
			return nil, named(part.Outbox(), err)
		}
		if err := r.dead.Err(); err != nil {
			return nil, named(part.DeadOutbox(), err)
		}
		c.Outbox, c.Dead = r.outbox.Val(), r.dead.Val()
		for k, ix := range contentIndexes(part) {
			cmd := r.index[k]
			if err := cmd.Err(); err != nil {
				return nil, named(ix.key, err)
			}
			n := cmd.Val()
			if ix.key == part.Running() && r.anchor.Err() == nil {
				n-- // the anchor, no job
			}
			if n > 0 {
				c.Indexes[strings.TrimPrefix(ix.key, part.Prefix())] = n
			}
		}
		out[i] = c
	}
	if err := pipeError(all); err != nil {
		return nil, err
	}
	if err := s.liveLazy(ctx, parts, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Bounds of liveLazy's reading of a partition's lazy indexes: past
// them, what is not read counts as held.
const (
	lazyMembersRead  = 1000 // buckets of later, jobs of pinx, classes of rwake
	laterEntriesRead = 1000 // entries of one later bucket
)

// liveLazy corrects, in out (read from parts), the counts of the indexes
// that keep entries of jobs gone until they come due (lua/lib_ready.lua,
// lib_limits.lua): a later bucket keeps the entry of a job that left it
// early (deleted, cancelled, run now), pinx a job deleted by an earlier
// release before its fallback or deadline, rwake a rate class whose waiting jobs were deleted. None
// is a job held, and a partition emptied so must not refuse a shrink
// for weeks. later then counts the entries of its buckets whose job
// hash exists, pinx its jobs that exist, rwake the jobs on the wait
// lists of its classes. Read in two round trips more (three with later
// buckets), only for partitions with such entries, at most
// lazyMembersRead members of each index and laterEntriesRead entries of
// a bucket: what is beyond counts as held.
func (s *Store) liveLazy(ctx context.Context, parts []keys.Partition, out []Contents) error {
	type lazy struct {
		at      int
		name    string
		members *redis.StringSliceCmd
		live    int64
	}
	var idx []*lazy
	for i := range out {
		for _, name := range []string{"later", "pinx", "rwake"} {
			if out[i].Indexes[name] > 0 {
				idx = append(idx, &lazy{at: i, name: name})
			}
		}
	}
	if len(idx) == 0 {
		return nil
	}
	all, _ := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range idx {
			l.members = p.ZRange(ctx, parts[l.at].Prefix()+l.name, 0, lazyMembersRead-1)
		}
		return nil
	})
	if err := pipeError(all); err != nil {
		return err
	}
	type bucket struct {
		of     *lazy
		list   *redis.StringSliceCmd
		size   *redis.IntCmd
		exists []*redis.IntCmd
	}
	var buckets []*bucket
	var counts [][]*redis.IntCmd // per idx: EXISTS of a pinned job, LLEN of a class's wait list
	all, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		counts = make([][]*redis.IntCmd, len(idx))
		for k, l := range idx {
			part := parts[l.at]
			for _, m := range l.members.Val() {
				switch l.name {
				case "later":
					key := part.LaterBucket(m)
					buckets = append(buckets, &bucket{of: l, list: p.LRange(ctx, key, 0, laterEntriesRead-1), size: p.LLen(ctx, key)})
				case "pinx":
					counts[k] = append(counts[k], p.Exists(ctx, part.Job(m)))
				case "rwake":
					counts[k] = append(counts[k], p.LLen(ctx, part.RateWait(m)))
				}
			}
		}
		return nil
	})
	if err := pipeError(all); err != nil {
		return err
	}
	if len(buckets) > 0 {
		all, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, b := range buckets {
				for _, id := range b.list.Val() {
					b.exists = append(b.exists, p.Exists(ctx, parts[b.of.at].Job(id)))
				}
			}
			return nil
		})
		if err := pipeError(all); err != nil {
			return err
		}
	}
	for k, l := range idx {
		l.live = out[l.at].Indexes[l.name] - int64(len(l.members.Val())) // not read: held, for all this knows
		for _, c := range counts[k] {
			l.live += c.Val()
		}
	}
	for _, b := range buckets {
		b.of.live += b.size.Val() - int64(len(b.exists)) // entries not read
		for _, c := range b.exists {
			b.of.live += c.Val()
		}
	}
	for _, l := range idx {
		if l.live > 0 {
			out[l.at].Indexes[l.name] = l.live
		} else {
			delete(out[l.at].Indexes, l.name)
		}
	}
	return nil
}
