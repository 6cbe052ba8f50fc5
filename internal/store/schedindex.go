package store

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

// LaterBucketMS is the width of a bucket of later jobs, the time a job due
// further ahead than that spends in a bucket before claims move it into
// the sched zset (lua/lib_ready.lua SCHED_BUCKET and SCHED_HORIZON).
const LaterBucketMS = 5000

// SchedIndex reads partition p's index of scheduled and retryable jobs as
// one map, job ID to due time (unix ms): the sched zset and the buckets
// of later jobs, less their stale entries (a job that has left the state
// or the bucket since, which the scripts skip). A job whose due time
// (F.run_at) is no finite number (corrupt data) is due at its entry's
// time, a bucket's start for a bucket entry, as the scripts read it
// (lua/lib_ready.lua). It reads every entry: for tests and tools, never a
// job's path.
func SchedIndex(ctx context.Context, rdb redis.Cmdable, p keys.Partition) (map[string]int64, error) {
	sched, err := rdb.ZRangeWithScores(ctx, p.Sched(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	buckets, err := rdb.ZRange(ctx, p.Later(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	type entry struct {
		id    string
		score int64 // the zset's score, or -1 - the bucket for a bucket entry
	}
	var entries []entry
	for _, z := range sched {
		entries = append(entries, entry{z.Member.(string), int64(z.Score)})
	}
	for _, b := range buckets {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			return nil, errors.New("store: bucket of later jobs named " + strconv.Quote(b))
		}
		ids, err := rdb.LRange(ctx, p.LaterBucket(b), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			entries = append(entries, entry{id, -1 - n})
		}
	}
	out := make(map[string]int64, len(entries))
	for _, e := range entries {
		h, err := rdb.HMGet(ctx, p.Job(e.id), keys.FieldState, keys.FieldRunAt).Result()
		if err != nil {
			return nil, err
		}
		s, _ := h[0].(string)
		if st := StateName(s); st != "scheduled" && st != "retryable" {
			continue
		}
		v, _ := h[1].(string)
		at, err := strconv.ParseFloat(v, 64)
		known := err == nil && !math.IsInf(at, 0) && !math.IsNaN(at)
		switch {
		case e.score >= 0 && (!known || at == float64(e.score)):
			out[e.id] = e.score
		case e.score < 0 && !known:
			out[e.id] = (-1 - e.score) * LaterBucketMS
		case e.score < 0 && int64(math.Floor(at/LaterBucketMS)) == -1-e.score:
			out[e.id] = int64(at)
		}
	}
	return out, nil
}
