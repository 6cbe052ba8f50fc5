package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// maxAckBatch bounds one ack script call.
const maxAckBatch = 256

// ack records an outcome (batched with others) and returns its result.
func (w *Worker) ack(p keys.Partition, a store.Ack) store.AckResult {
	return w.acks.do(p, a)
}

// flushAcks writes one partition's acks, retrying while Redis is
// unreachable for up to the longest lease (after which the jobs are reaped
// and the acks would be stale anyway), but not on a closed client, which
// never answers again. A retry is the same call as the first try
// (store.Ack), so a first try that Redis ran is answered, not repeated.
func (w *Worker) flushAcks(ctx context.Context, p keys.Partition, acks []store.Ack) []store.AckResult {
	giveUp := w.clk.Now().Add(w.longestLease)
	delay := 10 * time.Millisecond
	for {
		res, outboxed, err := w.st.Ack(ctx, p, acks)
		if outboxed > 0 {
			w.kickRelay()
		}
		if err == nil {
			return res
		}
		if w.clk.Now().After(giveUp) || ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
			if len(res) != len(acks) {
				res = make([]store.AckResult, len(acks))
				for i := range res {
					res[i].Err = err
				}
			}
			failed := 0 // the acks of calls that went through stand
			for _, r := range res {
				if r.Err == err {
					failed++
				}
			}
			w.log.Error("acks failed; the jobs will be reclaimed when their leases expire", "queue", p.Queue, "jobs", failed, "err", err)
			return res
		}
		w.log.Warn("ack failed; retrying", "queue", p.Queue, "err", err, "delay", delay)
		sleep(ctx, w.clk, delay)
		delay = min(2*delay, 2*time.Second)
	}
}
