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
// unreachable until the last of their leases runs out (store.Ack.GiveUp,
// reckoned as the outcome was known; else Resend from now; the longest
// lease for an ack that gives none, even beside others that do: after it
// the jobs are reaped and the acks would be stale anyway),
// but not on a closed client, which never answers again, nor on an answer
// a retry would get again (final). A retry is the same call as the first
// try (store.Ack), so a first try that Redis ran is answered, not repeated.
// When the store cut the acks into several calls and one failed, the
// acks of the calls that went through keep their results and only the
// others are tried again: a completion applied once and deleted would
// answer stale past its call's record. Each call's record is kept as long
// as its tries may come (Resend, the same for every ack of the batch).
func (w *Worker) flushAcks(ctx context.Context, p keys.Partition, acks []store.Ack) []store.AckResult {
	var resend time.Duration
	var giveUp time.Time // the last ack's (Ack.GiveUp), or resend from now
	now := w.clk.Now()
	for _, a := range acks {
		if a.Resend <= 0 {
			a.Resend = w.longestLease // hand-backs and give-backs
		}
		resend = max(resend, a.Resend)
		until := a.GiveUp
		if until.IsZero() {
			until = now.Add(a.Resend)
		}
		if until.After(giveUp) {
			giveUp = until
		}
	}
	for i := range acks {
		acks[i].Resend = resend // part of every call's ID: the same in each try
	}
	delay := 10 * time.Millisecond
	var out []store.AckResult // when a cut call failed: every ack's result, filled as they come
	var at []int              // then, the index in out of each ack still to send
	for {
		res, outboxed, err := w.st.Ack(ctx, p, acks)
		if outboxed > 0 {
			w.kickRelay()
		}
		if err == nil && out == nil {
			return res
		}
		if len(res) == len(acks) && (err == nil || res[0].Err != err) { // some went through
			if out == nil {
				out, at = make([]store.AckResult, len(acks)), make([]int, len(acks))
				for i := range at {
					at[i] = i
				}
			}
			var rest []store.Ack
			var restAt []int
			for k, r := range res {
				if err != nil && r.Err == err {
					rest, restAt = append(rest, acks[k]), append(restAt, at[k])
				} else {
					out[at[k]] = r
				}
			}
			acks, at = rest, restAt
		}
		if err == nil {
			return out
		}
		if w.clk.Now().After(giveUp) || ctx.Err() != nil || errors.Is(err, redis.ErrClosed) || final(err) {
			w.log.Error("acks failed; the jobs will be reclaimed when their leases expire", "queue", p.Queue, "jobs", len(acks), "err", err)
			if out == nil {
				out = make([]store.AckResult, len(acks))
				at = nil
			}
			for k := range acks {
				i := k
				if at != nil {
					i = at[k]
				}
				out[i].Err = err
			}
			return out
		}
		w.log.Warn("ack failed; retrying", "queue", p.Queue, "err", err, "delay", delay)
		sleep(ctx, w.clk, delay)
		delay = min(2*delay, 2*time.Second)
	}
}

// ackResend is how long attempt a's ack may be sent again
// (store.Ack.Resend): until its lease runs out, which once renewals stop is
// a lease from now at most, or the end an ExtendLease set.
func (w *Worker) ackResend(a *Attempt) time.Duration {
	a.mu.Lock()
	end, lease := a.leaseEnd, a.lease // ExtendLease writes both under mu
	a.mu.Unlock()
	return max(lease, end.Sub(w.clk.Now()))
}

// leaseGiveUp is when attempt a's writes stop being sent again, by the
// worker's clock: now plus its ackResend, reckoned with one reading of
// the clock.
func (w *Worker) leaseGiveUp(a *Attempt) time.Time {
	a.mu.Lock()
	end, lease := a.leaseEnd, a.lease
	a.mu.Unlock()
	if at := w.clk.Now().Add(lease); at.After(end) {
		return at
	}
	return end
}

// final reports whether err is an answer of Redis's that the same call
// would get again: data a script or this worker cannot read
// (store.ErrMalformed; a re-send of a call that ran answers from its
// record), or a partition of a newer data model. Retrying it for a lease
// would hold up nothing but the jobs' own reaping.
func final(err error) bool {
	return errors.Is(err, store.ErrMalformed) || errors.Is(err, store.ErrNewerDataModel)
}
