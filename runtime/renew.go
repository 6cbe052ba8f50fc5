package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// renewLoop renews the leases this worker holds every RenewInterval and
// beats the registry heartbeat (heartbeat.go) with them.
//
// No call waits behind another: each round sends one renewal per
// partition, concurrently, and the heartbeat beside them, and waits for
// them only until its bound (renewer.bound), after which the next round
// starts at once. A call still in flight then (an unreachable node, a
// registry that hangs) goes on in the background, and later rounds pass
// over its partition (or the heartbeat) until it returns; the attempts it
// holds are cancelled when their lease runs out by the worker's clock
// (expire), whether or not it ever returns.
func (w *Worker) renewLoop(ctx context.Context) {
	defer w.listenCancels(ctx)() // cancel.go
	r := &renewer{w: w, reg: w.register(), busy: map[keys.Partition]bool{}}
	defer r.stop(ctx)
	for n := 0; ; n++ {
		wait := w.opts.RenewInterval
		if !r.round(ctx, n > 0) { // round 0 beats the heartbeat only: nothing is leased yet
			wait = 0 // it gave up on a call at its bound: the next round is due
		}
		if ctx.Err() != nil {
			return
		}
		if end, ok := w.earliestLeaseEnd(); ok {
			wait = min(wait, max(end.Sub(w.clk.Now()), 0)) // cancelled on time (expire)
		}
		t := w.clk.NewTimer(wait)
		w.sig.Renewed.Signal(testsignal.Pass{Worker: w.opts.WorkerID, N: n})
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// renewer is the state of the renewal loop across its rounds: the calls
// still in flight.
type renewer struct {
	w   *Worker
	reg *registry

	mu      sync.Mutex
	busy    map[keys.Partition]bool // partitions with a renewal in flight
	beating bool                    // a heartbeat is in flight
	calls   sync.WaitGroup
}

// round runs one renewal round: it cancels the attempts whose lease has
// run out (expire), sends a renewal for each partition that has none in
// flight when renew is set, and a heartbeat when none is in flight, then
// waits for those calls until its bound. It reports false when it gave up
// waiting at the bound.
func (r *renewer) round(ctx context.Context, renew bool) bool {
	w := r.w
	now := w.clk.Now()
	r.expire(now)
	groups := map[keys.Partition][]*Attempt{}
	if renew {
		w.mu.Lock()
		for a := range w.inflight {
			if !a.ctl.gone.Load() { // lost: nothing it writes is accepted any more
				groups[a.ref.Partition] = append(groups[a.ref.Partition], a)
			}
		}
		w.mu.Unlock()
	}
	bound := r.bound(now)
	var send []keys.Partition
	r.mu.Lock()
	for p := range groups {
		if !r.busy[p] { // else its last call has not returned; expire watches its attempts
			r.busy[p] = true
			send = append(send, p)
		}
	}
	beat := !r.beating
	r.beating = true
	r.mu.Unlock()
	sent := len(send)
	if beat {
		sent++
	}
	if sent == 0 {
		return true
	}
	// armed before the calls are sent: a call that returns has been waited for
	t := w.clk.NewTimer(bound.Sub(now))
	defer t.Stop()
	done := make(chan struct{}, sent) // never blocks a call that outlives the round
	for _, p := range send {
		r.calls.Go(func() {
			defer func() {
				r.mu.Lock()
				delete(r.busy, p)
				r.mu.Unlock()
				done <- struct{}{}
			}()
			r.renew(ctx, p, groups[p], bound.Sub(now))
		})
	}
	if beat {
		r.calls.Go(func() {
			defer func() {
				r.mu.Lock()
				r.beating = false
				r.mu.Unlock()
				done <- struct{}{}
			}()
			r.reg.beat(ctx)
		})
	}
	for ; sent > 0; sent-- {
		select {
		case <-done:
		case <-t.C():
			return false
		case <-ctx.Done():
			return true
		}
	}
	return true
}

// bound is how long a round started at now waits for its calls: until the
// first lease held runs out (its attempt is then cancelled, by the next
// round's expire), and never longer than the shortest lease less
// RenewInterval, so that a lease renewed by this round, or claimed during
// it, is renewed again before it runs out while another call hangs.
func (r *renewer) bound(now time.Time) time.Time {
	o := r.w.opts
	shortest := o.Lease
	for _, d := range o.KindLease {
		shortest = min(shortest, d)
	}
	b := now.Add(shortest - o.RenewInterval)
	if end, ok := r.w.earliestLeaseEnd(); ok && end.Before(b) {
		b = end
	}
	return b
}

// renew renews the leases of as, all of partition p, in one call that
// gives up after timeout (a real duration: a fake clock does not end it),
// and cancels exactly the attempts whose lease is lost. When the call
// fails, attempts whose lease has run out by the worker's own reckoning
// when it failed are cancelled too: the worker can no longer be sure it
// holds them.
//
// An attempt whose outcome is being acked is renewed as well, until the
// ack returns: an ack that waits (on a slow or briefly unreachable Redis)
// must not let the lease run out under it, or another worker would run
// the job again although it is done. Such an attempt has nothing left to
// cancel, so a lost lease there is only the ack's to report.
func (r *renewer) renew(ctx context.Context, p keys.Partition, as []*Attempt, timeout time.Duration) {
	w := r.w
	cctx, cancel := context.WithTimeout(ctx, max(timeout, time.Millisecond))
	defer cancel()
	var (
		lost []store.Lost
		late []string
		err  error
	)
	// no cap over the partitions' calls: hung calls holding the slots of a
	// cap starved healthy partitions until their leases ran out (one node
	// of a cluster holding 8 of a worker's partitions); go-redis bounds
	// the connections per node, so a hung node holds its own pool only
	// read before the renewals are numbered: a renewal Redis refuses as
	// late (a later one ran first) ran no earlier than this
	sent := w.clk.Now()
	as, seqs := startRenewals(as) // given up meanwhile: not renewed
	if len(as) == 0 {
		return
	}
	defer func() {
		for _, a := range as {
			if a.renewalReturned() {
				r.calls.Go(func() { w.giveBack(a) })
			}
		}
	}()
	rs := make([]store.Renewal, len(as))
	for i, a := range as {
		rs[i] = store.Renewal{Lease: a.storeLease(), Duration: a.leaseDuration(), Seq: seqs[i]}
	}
	lost, late, err = w.st.Renew(cctx, p, rs)
	if err == nil {
		w.renewed(as, rs, lost, late, sent)
		return
	}
	if ctx.Err() != nil {
		return // the worker stops
	}
	w.log.Warn("lease renewal failed", "queue", p.Queue, "partition", p.Index, "err", err)
	r.expire(w.clk.Now())
}

// renewed applies the answer of a renewal of as (sent at sent, as rs):
// the attempts whose lease is lost are cancelled, the others' leases run
// on from sent, but for those renewed late (a later renewal of the lease
// ran first and set its end).
func (w *Worker) renewed(as []*Attempt, rs []store.Renewal, lost []store.Lost, late []string, sent time.Time) {
	gone := make(map[string]string, len(lost))
	for _, l := range lost {
		gone[l.LeaseID] = l.State
	}
	for i, a := range as {
		if slices.Contains(late, a.LeaseID) {
			continue
		}
		if state, ok := gone[a.LeaseID]; ok {
			if a.settled.Load() { // acked meanwhile, or the ack will say why
				continue
			}
			if state == stateCancelled { // an operator cancelled the job
				a.cancelled()
				continue
			}
			a.lose() // logged when the attempt concludes (logging.go)
			continue
		}
		a.reckon(rs[i].Seq, sent.Add(rs[i].Duration))
	}
}

// expire gives up the attempts whose lease has run out by the worker's
// clock at now (Worker.expire), and hands back the jobs of those with no
// renewal in flight (giveBack), each on a goroutine of its own that stop
// waits for: the renewals wait behind no ack.
func (r *renewer) expire(now time.Time) {
	for _, a := range r.w.expire(now) {
		r.calls.Go(func() { r.w.giveBack(a) })
	}
}

// expire cancels, with cause ErrLeaseLost, the attempts whose lease has
// run out by the worker's clock at now: their renewals did not come back
// in time, and another worker may run the job already. It needs no call
// to return. An attempt whose outcome is being acked is left to its ack.
// It returns the attempts given up whose jobs are to be given back now
// (abandon).
func (w *Worker) expire(now time.Time) (back []*Attempt) {
	var out []*Attempt
	w.mu.Lock()
	for a := range w.inflight {
		if a.settled.Load() || a.ctl.gone.Load() {
			continue
		}
		a.mu.Lock()
		// lapsed already: another pass (the loop's, a failed renewal's)
		// took it, and abandons it once
		if !a.lapsed && !now.Before(a.leaseEnd) {
			a.lapsed = true
			out = append(out, a)
		}
		a.mu.Unlock()
	}
	w.mu.Unlock()
	for _, a := range out {
		if !a.settled.Load() && a.abandon() { // logged when the attempt concludes (logging.go)
			back = append(back, a)
		}
	}
	return back
}

// abandon cancels an attempt given up by the worker's clock (expire) with
// cause ErrLeaseLost, and reports whether its job is to be given back
// (giveBack) now. It is given back when nothing of the attempt will be
// acked: when its handler, still running, is cancelled with that cause,
// whoever settles the attempt then (its handler returning, or the grace
// watch) finds the cause and acks nothing (settle). The handler is
// cancelled under mu, which its return takes (handlerReturned) before it
// settles, so that it cannot settle with a context not yet cancelled. An
// attempt whose handler has returned acks its outcome, which ends the
// lease, and so does one stopped for another cause first (a timeout, a
// shutdown); one whose handler has not started has no context to cancel
// yet. While renewals of the lease are in flight the give-back waits for
// them (renewalReturned): sent at once, it could land before them.
func (a *Attempt) abandon() bool {
	a.mu.Lock()
	ctx, running := a.ctl.ctx, a.cancel != nil && !a.hasReturned
	if running {
		a.cancel(ErrLeaseLost)
	}
	a.mu.Unlock()
	a.lose() // the grace watch, and LeaseLost
	if !running {
		return false
	}
	if cause := context.Cause(ctx); !errors.Is(cause, ErrLeaseLost) || errors.Is(cause, ErrCancelled) {
		return false // cancelled by an operator: the store holds no lease either
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.renewing > 0 {
		a.handBack = true
		return false
	}
	return true
}

// startRenewals counts a renewal in flight for each of as
// (startRenewal), and returns those the renewal loop renews now, with
// their renewals' numbers.
func startRenewals(as []*Attempt) ([]*Attempt, []int64) {
	out, seqs := as[:0:0], make([]int64, 0, len(as))
	for _, a := range as {
		if seq, ok := a.startRenewal(false); ok {
			out = append(out, a)
			seqs = append(seqs, seq)
		}
	}
	return out, seqs
}

// reckon sets the lease's end as the answer of renewal seq gives it, end,
// unless the answer of a later renewal has set it already: Redis applied
// that one last (lua/renew.lua refuses an older one after it).
func (a *Attempt) reckon(seq int64, end time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reckonLocked(seq, end)
}

// reckonLocked is reckon with a.mu held.
func (a *Attempt) reckonLocked(seq int64, end time.Time) {
	if seq > a.reckoned {
		a.leaseEnd, a.reckoned = end, seq
		a.movedLocked()
	}
}

// movedLocked tells the reader of leaseEnd's moves, if any, that it
// moved (a.mu held).
func (a *Attempt) movedLocked() {
	if a.leaseMoved != nil {
		close(a.leaseMoved)
		a.leaseMoved = nil
	}
}

// startRenewal counts a renewal of the lease in flight, unless the worker
// has given the attempt up (expire decides that under mu): none is sent
// once its give-back may have been. The renewal loop's (extend false) is
// not sent either while an ExtendLease that shortens the lease is under
// way (beginExtend), and marks one that lengthens it overlapped. It
// returns the renewal's number (store.Renewal Seq).
func (a *Attempt) startRenewal(extend bool) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lapsed || (a.extending && !extend) {
		return 0, false
	}
	now := a.ctl.w.clk.Now() // no later than the renewal is sent
	if a.renewing == 0 {
		a.oldestRenewal = now
	}
	if a.lengthening && !extend {
		a.overlap(now.Add(a.lease))
	}
	a.renewing++
	a.renewals++
	return a.renewals, true
}

// overlap records a renewal in flight beside a lengthening ExtendLease,
// whose end (from no later than it was sent) would be end: the earliest
// of them is the latest end the worker may reckon with (ExtendLease).
// Must hold a.mu.
func (a *Attempt) overlap(end time.Time) {
	if !a.overlapped || end.Before(a.overlapEnd) {
		a.overlapEnd = end
	}
	a.overlapped = true
}

// beginExtend marks an ExtendLease of the attempt to duration d under way
// (until endExtend), and reports false when the worker has given the
// attempt up. Two renewals in flight at once leave the lease to whichever
// Redis ran last, and the worker's reckoning of its end to whichever reply
// it read last:
//   - One that shortens the lease waits for the renewals in flight: the
//     channel returned, when not nil, is closed once they have returned,
//     and the renewal loop sends none until endExtend. Otherwise a renewal
//     sent before it, and answered after it, would make the worker hold
//     the attempt past the lease's real end.
//   - One that keeps or lengthens it waits for nothing and stops no
//     renewal (a slow reply would otherwise cost the lease it renews): when
//     renewals were in flight beside it (overlapped), the worker reckons
//     with the earliest end one of them would give the lease (overlapEnd,
//     from when it started), if that is earlier than its own.
func (a *Attempt) beginExtend(d time.Duration) (done <-chan struct{}, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lapsed {
		return nil, false
	}
	if d >= a.lease {
		a.lengthening, a.overlapped = true, false
		if a.renewing > 0 { // the oldest of those in flight ends first
			a.overlap(a.oldestRenewal.Add(a.lease))
		}
		return nil, true
	}
	a.extending = true
	if a.renewing == 0 {
		return nil, true
	}
	if a.renewalsDone == nil {
		a.renewalsDone = make(chan struct{})
	}
	return a.renewalsDone, true
}

// endExtend ends what beginExtend began.
func (a *Attempt) endExtend() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extending, a.lengthening, a.overlapped = false, false, false
}

// takeExtendTurn waits until no other ExtendLease of the attempt is under
// way, or ctx ends (its cause returned), and takes the turn until
// endExtendTurn.
func (a *Attempt) takeExtendTurn(ctx context.Context) error {
	for {
		a.mu.Lock()
		if !a.extendBusy {
			a.extendBusy = true
			a.mu.Unlock()
			return nil
		}
		if a.extendFree == nil {
			a.extendFree = make(chan struct{})
		}
		free := a.extendFree
		a.mu.Unlock()
		a.signalExtending()
		select {
		case <-free:
		case <-ctx.Done():
			return ctxEnded(ctx)
		}
	}
}

// signalExtending tells a test that an ExtendLease of a waits
// (testsignal.Worker.Extending).
func (a *Attempt) signalExtending() {
	w := a.ctl.w
	w.sig.Extending.Signal(testsignal.Job{Worker: a.Worker, JobID: a.ID})
}

// endExtendTurn gives the turn taken by takeExtendTurn back.
func (a *Attempt) endExtendTurn() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extendBusy = false
	if a.extendFree != nil {
		close(a.extendFree)
		a.extendFree = nil
	}
}

// renewalReturned counts a renewal of the lease returned (whatever its
// answer), and reports whether the attempt's job is now to be given back:
// the worker gave it up while renewals were in flight, and this was the
// last.
func (a *Attempt) renewalReturned() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.renewing--
	if a.renewing == 0 && a.renewalsDone != nil {
		close(a.renewalsDone) // an ExtendLease waits for it (beginExtend)
		a.renewalsDone = nil
	}
	back := a.handBack && a.renewing == 0
	if back {
		a.handBack = false
	}
	return back
}

// giveBack hands back the job of attempt a, given up by the worker's clock
// (abandon), as a crash: what the reaper does with an expired lease. The
// store may hold the lease still, for an attempt nobody runs: a renewal in
// flight when the worker gave up (a slow node, a late reply) renewed it,
// or the store's clock is behind the worker's. The job would sit running
// until that lease ran out and a reaper took it. It is sent once no
// renewal of the lease is in flight (none is sent after the worker gave
// the attempt up), and checks the attempt's identity: when the store had
// ended the lease already (the usual case) it is stale and writes nothing,
// and once it is written no renewal, late or sent again, finds the lease
// held. An outcome of the attempt cannot apply besides it: none is acked
// (abandon), and the store applies one outcome per attempt.
func (w *Worker) giveBack(a *Attempt) {
	// sent again for the longest lease from now, not from when its call
	// starts: it may wait behind the partition's earlier acks, retried
	res := w.ack(a.ref.Partition, store.Ack{Lease: a.storeLease(), Code: store.CodeExpire, Reason: "lease_expired",
		Message: "lease given up by its worker " + a.Worker + ": no renewal came back before it ran out",
		GiveUp:  w.clk.Now().Add(w.longestLease)})
	if res.Err != nil {
		return // stale: reaped, or expired by store time; or Redis failed, and the reaper will take it
	}
	r := store.Reaped{Local: a.ref.Local, State: res.State, Holder: a.Worker}
	w.logReaped(a.ID, a.Queue, r) // logging.go
	w.tel.reaped(a.Queue, res.State)
	w.reapedDeaths(a.ref.Partition, []store.Reaped{r})
	if w.sig.Settled.Enabled() {
		w.sig.Settled.Signal(testsignal.Settled{Worker: w.opts.WorkerID, JobID: a.ID, Fence: a.Fence,
			By: testsignal.GiveBack, State: res.State})
	}
}

// earliestLeaseEnd is the first lease end among the attempts expire
// watches, by the worker's clock; ok is false when there is none.
func (w *Worker) earliestLeaseEnd() (end time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for a := range w.inflight {
		if a.settled.Load() || a.ctl.gone.Load() {
			continue
		}
		a.mu.Lock()
		if !ok || a.leaseEnd.Before(end) {
			end, ok = a.leaseEnd, true
		}
		a.mu.Unlock()
	}
	return end, ok
}

// stop waits for the calls in flight (ctx has ended: they return), then
// takes the worker out of the registry: a heartbeat still in flight would
// put it back.
func (r *renewer) stop(ctx context.Context) {
	r.calls.Wait()
	r.reg.unregister(ctx)
}

// lose cancels the attempt with cause ErrLeaseLost.
func (a *Attempt) lose() {
	// Cancel first: whoever wakes on LeaseLost must find the cause set.
	a.stop(ErrLeaseLost)
	a.ctl.markLost()
}

// stop cancels the attempt with cause and starts the grace watch; when
// its handler has not started yet (no cancel), execute does both as it
// starts it.
func (a *Attempt) stop(cause error) {
	a.mu.Lock()
	c := a.cancel
	if c == nil && a.early == nil {
		a.early = cause
	}
	a.mu.Unlock()
	if c != nil {
		c(cause)
		a.watch()
	}
}
