package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// maxAckBatch bounds one ack script call.
const maxAckBatch = 256

type ackReq struct {
	p    keys.Partition
	ack  store.Ack
	done chan store.AckResult
}

// ack queues an outcome and waits for its result. Acks are batched
// opportunistically: a lone ack goes out at once, and whatever arrives while
// a call is in flight goes out together in the next one.
func (w *Worker) ack(p keys.Partition, a store.Ack) store.AckResult {
	req := &ackReq{p: p, ack: a, done: make(chan store.AckResult, 1)}
	w.acks <- req
	return <-req.done
}

func (w *Worker) ackLoop(ctx context.Context) {
	for {
		var first *ackReq
		select {
		case <-ctx.Done():
			return
		case first = <-w.acks:
		}
		batch := map[keys.Partition][]*ackReq{first.p: {first}}
		for n := 1; n < maxAckBatch; n++ {
			select {
			case r := <-w.acks:
				batch[r.p] = append(batch[r.p], r)
				continue
			default:
			}
			break
		}
		for p, reqs := range batch {
			w.flushAcks(ctx, p, reqs)
		}
	}
}

// flushAcks writes one partition's acks, retrying while Redis is
// unreachable for up to the longest lease (after which the jobs are reaped
// and the acks would be stale anyway).
func (w *Worker) flushAcks(ctx context.Context, p keys.Partition, reqs []*ackReq) {
	acks := make([]store.Ack, len(reqs))
	for i, r := range reqs {
		acks[i] = r.ack
	}
	giveUp := w.clk.Now().Add(w.longestLease)
	delay := 10 * time.Millisecond
	for {
		res, outboxed, err := w.st.Ack(ctx, p, acks)
		if outboxed > 0 {
			w.kickRelay()
		}
		if err == nil {
			for i, r := range reqs {
				r.done <- res[i]
			}
			return
		}
		if w.clk.Now().After(giveUp) || ctx.Err() != nil {
			w.log.Error("acks failed; the jobs will be reclaimed when their leases expire", "queue", p.Queue, "jobs", len(reqs), "err", err)
			for _, r := range reqs {
				r.done <- store.AckResult{Err: err}
			}
			return
		}
		w.log.Warn("ack failed; retrying", "queue", p.Queue, "err", err, "delay", delay)
		sleep(ctx, w.clk, delay)
		delay = min(2*delay, 2*time.Second)
	}
}
