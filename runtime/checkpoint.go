package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// flushCheckpoints writes a batch of step checkpoints of one partition.
// The checkpoints of a call that failed are sent again, as acks are
// (flushAcks), while Redis is unreachable, until the last of their
// attempts' leases could have run out (store.Checkpoint.GiveUp, reckoned
// as each was sent; the longest lease from the first failure for one
// that gives none):
// Redis may have run the call and lost its reply, and a step that did
// commit must not fail its attempt (an attempt spent, a retry backoff, a
// job with one attempt archived). Sending one again is safe: the call is
// the same (its ID comes from its content), and a checkpoint already
// written with this record answers ok without applying its effects twice
// (lua/step.lua). Not sent again: a closed client, an answer a retry
// would get again (final), or each checkpoint's own verdict (stale, a
// step already written, effects that cannot apply).
func (w *Worker) flushCheckpoints(ctx context.Context, p keys.Partition, cs []store.Checkpoint) []store.CheckpointResult {
	out, err := w.st.Checkpoints(ctx, p, cs)
	if err == nil {
		return out
	}
	giveUp := w.clk.Now().Add(w.longestLease)
	if last := latestGiveUp(cs); !last.IsZero() {
		giveUp = last
	}
	delay := 10 * time.Millisecond
	res, at := out, make([]int, len(cs)) // the last try's results, and each one's index in out
	for i := range at {
		at[i] = i
	}
	for err != nil {
		if w.clk.Now().After(giveUp) || ctx.Err() != nil || errors.Is(err, redis.ErrClosed) || final(err) {
			w.log.Error("step checkpoints failed", "queue", p.Queue, "partition", p.Index, "err", err)
			return out
		}
		var again []store.Checkpoint
		var againAt []int
		for k, r := range res {
			if r.Err == err { // the failed call's, not a checkpoint's own verdict
				again, againAt = append(again, cs[at[k]]), append(againAt, at[k])
			}
		}
		w.log.Warn("step checkpoints failed; sending them again", "queue", p.Queue, "partition", p.Index,
			"steps", len(again), "err", err, "delay", delay)
		sleep(ctx, w.clk, delay)
		delay = min(2*delay, 2*time.Second)
		res, err = w.st.Checkpoints(ctx, p, again)
		at = againAt
		for k, i := range at {
			out[i] = res[k]
		}
	}
	return out
}

// latestGiveUp is the latest GiveUp of cs, zero when one of them gives
// none (its tries are bounded by the longest lease).
func latestGiveUp(cs []store.Checkpoint) time.Time {
	var last time.Time
	for _, c := range cs {
		if c.GiveUp.IsZero() {
			return time.Time{}
		}
		if c.GiveUp.After(last) {
			last = c.GiveUp
		}
	}
	return last
}
