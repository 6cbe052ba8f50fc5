package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// fetchLoop claims jobs while there are free slots and partitions that may
// have work. A partition stops being polled once a claim finds it dry; it
// becomes ready again on a pub/sub wake-up naming it, when its next
// scheduled job is due, after IdlePoll (the safety net for a lost wake-up,
// per partition, so it also holds while other partitions keep the worker
// busy), or when the subscription was re-established (wake-ups sent while
// it was down are lost). Under load claims are back to back, sized to the
// free slots. It returns nil when ctx ends, or an error once the Redis
// client is closed under the worker: nothing could be claimed any more.
func (w *Worker) fetchLoop(ctx, jobsCtx context.Context, wk *wakeups) error {
	n := len(w.parts)
	ready := make([]bool, n)
	due := make([]time.Time, n)
	for i := range ready {
		ready[i] = true
	}
	pick := newWeightedPicker(w.parts, w.opts.Queues)
	// failed holds, per partition, a claim whose call failed, to be sent
	// again as it was (its ID names it, store.ClaimRequest.ID) the next
	// time the partition is chosen: Redis may have run it and lost its
	// reply, leasing jobs that only its record can hand to this worker
	// (resendFor). Until then the partition waits out its own back-off,
	// errDelay, not ready and holding no slots: the worker's other
	// partitions (on other cluster nodes, say) are served meanwhile.
	failed := make([]*failedClaim, n)
	errDelay := make([]time.Duration, n)
	// held marks the partitions whose last claim passed a suspect over
	// while the process ran one, or started one; heldWake, closed once
	// the process runs none (suspectFreed, read before that claim's
	// count), readies them. A claim whose only suspect was contained
	// readies its partition at once.
	held := make([]bool, n)
	var heldWake <-chan struct{}
	// into holds the jobs of each claim until start has copied them out:
	// one claim's storage serves the next.
	into := make([]store.Job, w.opts.ClaimBatch)
	wake := wk.ch // nil once closed: a nil channel is never ready
	made := newOffers()
	defer func() {
		// pushes that come until the offers end are handed back
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeTimeout)
		defer cancel()
		wk.withdraw(wctx, w.log, func(m *redis.Message) { w.takePush(ctx, jobsCtx, wk, m, made) })
	}()
	onWake := func(m any, open bool) {
		i := wakeAll
		if !open {
			// go-redis closes it only when the subscription ends for good
			// (the client was closed). A closed channel is always ready, so
			// stop reading it and poll; the claim tells whether to go on.
			w.log.Warn("wake-up subscription closed; polling instead")
			wake = nil
		} else {
			i = wk.partition(m)
		}
		switch {
		case i == pushed:
			w.takePush(ctx, jobsCtx, wk, m.(*redis.Message), made)
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
			case m, open := <-wake:
				onWake(m, open)
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
		if heldWake != nil {
			select {
			case <-heldWake: // the suspect the process ran is done
				for i := range held {
					if held[i] {
						ready[i], due[i], held[i] = true, time.Time{}, false
					}
				}
				heldWake = nil
			default:
			}
		}
		chosen := pick.next(ready)
		if chosen < 0 {
			w.waitForWork(ctx, wake, heldWake, due, onWake)
			continue
		}
		var (
			slots int
			req   store.ClaimRequest
			sent  = w.clk.Now()
			// free is suspectFreed as the claim went out, read before the
			// count: a suspect that ends after it wakes this worker if its
			// claim passes one over (heldWake)
			free = suspectFreed()
		)
		resent := failed[chosen] != nil
		if f := failed[chosen]; f != nil {
			req, sent = f.req, f.sent // sent: when the leases of its first run began, if it ran
			// the same claim, answered by its record, may bring back as
			// many jobs as it asked for; it goes out however many slots
			// are free (slots taken meanwhile by pushes, or by claims
			// elsewhere, would otherwise hold it back until its leases ran
			// out, each reaped job charged a crash), and the jobs past the
			// free slots are handed back, nothing charged
			slots = w.acquire(req.N)
		} else {
			if slots = w.acquire(w.opts.ClaimBatch); slots == 0 {
				select {
				case <-ctx.Done():
				case <-w.freed:
				case m, open := <-wake:
					onWake(m, open)
				}
				continue
			}
			if w.staleQueue(w.parts[chosen].Queue) { // resized: checkLayouts logged it
				w.release(slots)
				ready[chosen], due[chosen] = false, now.Add(w.opts.IdlePoll)
				continue
			}
			nonce := w.nonce + "-" + strconv.FormatInt(w.claims.Add(1), 10)
			req = store.ClaimRequest{
				N: slots, Lease: w.opts.Lease, KindLease: w.opts.KindLease, Worker: w.opts.WorkerID,
				Nonce: nonce, ID: nonce, PromoteLimit: 100, NoSuspect: suspects.Load() > 0,
			}
			if req.NoSuspect {
				heldWake = free
			}
			if wk.push != "" {
				req.Offer, req.OfferChannel, req.OfferFor = w.offerSize(), wk.push, w.opts.IdlePoll
				made.made(nonce, sent, w.offerKeep())
			}
		}
		p := w.parts[chosen]
		req.Into = into
		res, err := w.st.Claim(ctx, p, req)
		if err != nil {
			// its slots go back while it waits: a partition that is down
			// holds none of the worker's capacity
			w.release(slots)
			if failed[chosen] == nil {
				failed[chosen] = &failedClaim{req: req, sent: sent}
			}
			if ctx.Err() != nil {
				break // stopping: handBackClaims sends it once more
			}
			if w.clientClosed(ctx, err) {
				return fmt.Errorf("sluice: cannot claim: %w", err)
			}
			d := min(max(2*errDelay[chosen], 10*time.Millisecond), 2*time.Second)
			errDelay[chosen] = d
			if w.clk.Now().Add(d).Sub(failed[chosen].sent) >= w.resendFor() {
				// any leases its first run made have run out: the reaper
				// will hand those jobs back
				failed[chosen] = nil
			}
			w.log.Warn("claim failed; backing off", "queue", p.Queue, "partition", p.Index, "err", err, "delay", d,
				"send_again", failed[chosen] != nil)
			ready[chosen], due[chosen] = false, w.clk.Now().Add(d)
			continue
		}
		failed[chosen], errDelay[chosen] = nil, 0
		held[chosen] = false             // set below if this claim passed suspects over (not an earlier one's)
		run := min(len(res.Jobs), slots) // a resent claim may bring back more
		pick.served(chosen, run)
		w.release(slots - run)
		if res.Dry {
			ready[chosen] = false
			due[chosen] = sent.Add(w.opts.IdlePoll)
			if res.Scheduled { // a delay in store time, from about when the claim was sent
				due[chosen] = sent.Add(min(w.opts.IdlePoll, res.NextDue))
			}
			if res.HeldSuspects {
				due[chosen] = sent.Add(suspectPoll)
				held[chosen] = true
			}
			w.sig.Dry.Signal(testsignal.Dry{Worker: w.opts.WorkerID, Queue: p.Queue, Partition: p.Index})
		}
		for _, pk := range res.Parked {
			w.logArchivedAtClaim(keys.Ref{Partition: p, Local: pk.Local}.String(), p.Queue, pk.Reason) // logging.go
		}
		w.archivedAtClaim(p, res.Parked)
		if w.sig.Settled.Enabled() {
			for _, pk := range res.Parked {
				w.sig.Settled.Signal(testsignal.Settled{Worker: w.opts.WorkerID, JobID: keys.Ref{Partition: p, Local: pk.Local}.String(),
					By: testsignal.Claim, State: "archived"})
			}
		}
		var back []*store.Job
		counted := false // a suspect of the claim's counts, or another Worker's kept it out
		for _, j := range res.Jobs[:run] {
			if resent && !w.mayRunResent(j, sent) {
				back = append(back, j)
				continue
			}
			suspect := w.isSuspect(j)
			counted = counted || suspect
			if suspect && !suspects.CompareAndSwap(0, 1) {
				// another Worker of the process leased a suspect meanwhile
				// (the claim may lease one while none runs): handed back,
				// nothing charged, for a claim once that one is done
				back = append(back, j)
				continue
			}
			w.start(jobsCtx, p, j, sent, suspect) // a suspect's count taken above
		}
		if held[chosen] {
			switch {
			case counted || suspects.Load() > 0:
				// the suspects passed over wait for the one the process
				// runs (free was read before the count: if it ended since,
				// free is closed)
				heldWake = free
			default:
				// none runs: the one the claim leased was contained (the
				// script leases one job with a crash on record a claim),
				// or the one a claim sent before was held back for ended
				// since (a resent claim): claim again now
				ready[chosen], due[chosen], held[chosen] = true, time.Time{}, false
			}
		}
		w.release(len(back))
		w.handBack(p, copyJobs(append(back, res.Jobs[run:]...)))
		clear(into[:min(len(res.Jobs), len(into))]) // keeps no payload alive while idle
	}
	w.handBackClaims(ctx, failed)
	return nil
}

// copyJobs copies jobs out of a claim's storage (ClaimRequest.Into), which
// the next claim writes over, for a hand-back that runs after it.
func copyJobs(jobs []*store.Job) []*store.Job {
	out := make([]*store.Job, len(jobs))
	for i, j := range jobs {
		c := *j
		out[i] = &c
	}
	return out
}

// handBackClaims sends each claim whose call failed once more as the
// worker stops, under its ID, and hands back the jobs its first run
// leased, if it ran: the loop would have sent it again, and left, those
// jobs would stay leased to no attempt until reaped, each charged a
// crash. It makes no offer (the worker takes no pushes any more). The
// claims go at once, each bounded by nodeTimeout: a partition that does
// not answer holds up none of the others (nor the shutdown, by as many
// timeouts as there are such partitions).
func (w *Worker) handBackClaims(ctx context.Context, failed []*failedClaim) {
	var all sync.WaitGroup
	for i, f := range failed {
		if f == nil {
			continue
		}
		req, p := f.req, w.parts[i]
		req.Into, req.Offer, req.OfferChannel = nil, 0, ""
		all.Go(func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodeTimeout)
			res, err := w.st.Claim(cctx, p, req)
			cancel()
			if err != nil {
				w.log.Warn("a failed claim could not be sent again as the worker stops; the reaper takes back what it leased",
					"queue", p.Queue, "partition", p.Index, "err", err)
				return
			}
			w.archivedAtClaim(p, res.Parked)
			w.handBack(p, res.Jobs)
		})
	}
	all.Wait()
}

// failedClaim is a claim whose call failed: its request, and when it was
// first sent.
type failedClaim struct {
	req  store.ClaimRequest
	sent time.Time
}

// resendFor is how long after first sending a claim that failed the
// worker sends it again under its ID (store.ClaimRequest.ID), for the
// jobs a first run whose reply was lost may have leased: the longest
// lease. The store keeps the claim's record for the longest lease the
// claim made (Lease at least), so a job leased for it may come back until
// then (the claim answers no lease that ran out); a claim sent again
// once its record is gone runs anew. Past it, the reaper takes those
// jobs back, each charged a crash. What a claim sent again brings back
// runs only if mayRunResent.
func (w *Worker) resendFor() time.Duration {
	d := w.opts.Lease
	for _, l := range w.opts.KindLease {
		d = max(d, l)
	}
	return d
}

// mayRunResent reports whether job j, brought back by a claim sent again
// (first sent at sent), may run here; otherwise it is handed back
// (Worker.handBack), charged nothing. It may not when its lease, which
// the worker reckons from the first send, has less than half its length
// left (a handler would start on a lease about to run out). (A suspect
// runs only while the process runs none, as from any claim.)
func (w *Worker) mayRunResent(j *store.Job, sent time.Time) bool {
	return w.clk.Now().Sub(sent) <= w.leaseFor(j.Kind)/2
}

// leaseFor is the lease of a job of kind.
func (w *Worker) leaseFor(kind string) time.Duration {
	if d, ok := w.opts.KindLease[kind]; ok {
		return d
	}
	return w.opts.Lease
}

// isSuspect reports whether j has a crash on record and runs in process
// (a contained kind's crash takes no other job down).
func (w *Worker) isSuspect(j *store.Job) bool { return j.CrashAttempt > 0 && !w.contained(j.Kind) }

// clientClosed tells whether err means the Redis client is closed, for
// good. A cluster client also fails a command on one of its node clients
// that was closed under it (the node left the cluster); a PING, which any
// node answers, tells the two apart.
func (w *Worker) clientClosed(ctx context.Context, err error) bool {
	return errors.Is(err, redis.ErrClosed) && errors.Is(w.st.Client().Ping(ctx).Err(), redis.ErrClosed)
}

// suspectPoll is how soon a worker claims again from a partition whose
// last claim passed over jobs with a crash on record: one of them may run
// here once the worker's own suspect is done.
const suspectPoll = 100 * time.Millisecond

// waitForWork blocks until a wake-up on wake, the earliest due time (every
// partition that is not ready has one), or shutdown.
func (w *Worker) waitForWork(ctx context.Context, wake <-chan any, heldWake <-chan struct{}, due []time.Time, onWake func(any, bool)) {
	wait := w.opts.IdlePoll
	for _, d := range due {
		if !d.IsZero() {
			wait = min(wait, max(d.Sub(w.clk.Now()), time.Millisecond))
		}
	}
	t := w.clk.NewTimer(wait)
	defer t.Stop()
	w.sig.Idle.Signal(testsignal.Idle{Worker: w.opts.WorkerID})
	select {
	case <-ctx.Done():
	case m, open := <-wake:
		onWake(m, open)
	case <-heldWake: // the loop readies the partitions that passed a suspect over
	case <-t.C(): // the loop readies what is due
	}
}

func sleep(ctx context.Context, clk Clock, d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
