package runtime

import (
	"context"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/store"
)

// fetchLoop claims jobs while there are free slots and partitions that may
// have work. A partition stops being polled once a claim finds it dry; it
// becomes ready again on a pub/sub wake-up naming it, when its next
// scheduled job is due, after IdlePoll (the safety net for a lost wake-up,
// per partition, so it also holds while other partitions keep the worker
// busy), or when the subscription was re-established (wake-ups sent while
// it was down are lost). Under load claims are back to back, sized to the
// free slots.
func (w *Worker) fetchLoop(ctx, jobsCtx context.Context, wk *wakeups) {
	n := len(w.parts)
	ready := make([]bool, n)
	due := make([]time.Time, n)
	for i := range ready {
		ready[i] = true
	}
	pick := newWeightedPicker(w.parts, w.opts.Queues)
	errDelay := time.Duration(0)
	onWake := func(i int) {
		switch {
		case i >= 0:
			ready[i] = true
		case i == wakeAll:
			for j := range ready {
				ready[j] = true
			}
		}
	}
	for ctx.Err() == nil {
		for drained := false; !drained; {
			select {
			case m := <-wk.ch:
				onWake(wk.partition(m))
			default:
				drained = true
			}
		}
		now := w.clk.Now()
		for i := range n {
			if !due[i].IsZero() && !due[i].After(now) {
				ready[i], due[i] = true, time.Time{}
			}
		}
		chosen := pick.next(ready)
		if chosen < 0 {
			w.waitForWork(ctx, wk, due, onWake)
			continue
		}
		slots := w.acquire(w.opts.ClaimBatch)
		if slots == 0 {
			select {
			case <-ctx.Done():
			case <-w.freed:
			case m := <-wk.ch:
				onWake(wk.partition(m))
			}
			continue
		}
		p := w.parts[chosen]
		sent := w.clk.Now()
		res, err := w.st.Claim(ctx, p, store.ClaimRequest{
			N: slots, Lease: w.opts.Lease, KindLease: w.opts.KindLease, Worker: w.opts.WorkerID,
			Nonce: w.nonce + "-" + strconv.FormatInt(w.claims.Add(1), 10), PromoteLimit: 100,
		})
		if err != nil {
			w.release(slots)
			if ctx.Err() != nil {
				return
			}
			errDelay = min(max(2*errDelay, 10*time.Millisecond), 2*time.Second)
			w.log.Warn("claim failed; backing off", "queue", p.Queue, "partition", p.Index, "err", err, "delay", errDelay)
			sleep(ctx, w.clk, errDelay)
			continue
		}
		errDelay = 0
		pick.served(chosen, len(res.Jobs))
		w.release(slots - len(res.Jobs))
		if res.Dry {
			ready[chosen] = false
			due[chosen] = sent.Add(w.opts.IdlePoll)
			if !res.NextDue.IsZero() && res.NextDue.Before(due[chosen]) {
				due[chosen] = res.NextDue
			}
		}
		for _, pk := range res.Parked {
			w.log.Warn("job archived at claim", "queue", p.Queue, "job", pk.Local, "reason", pk.Reason)
		}
		w.archivedAtClaim(p, res.Parked)
		for _, j := range res.Jobs {
			w.start(jobsCtx, p, j, sent)
		}
	}
}

// waitForWork blocks until a wake-up, the earliest due time (every
// partition that is not ready has one), or shutdown.
func (w *Worker) waitForWork(ctx context.Context, wk *wakeups, due []time.Time, onWake func(int)) {
	wait := w.opts.IdlePoll
	for _, d := range due {
		if !d.IsZero() {
			wait = min(wait, max(d.Sub(w.clk.Now()), time.Millisecond))
		}
	}
	t := w.clk.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case m := <-wk.ch:
		onWake(wk.partition(m))
	case <-t.C(): // the loop readies what is due
	}
}

func sleep(ctx context.Context, clk clock.Clock, d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
