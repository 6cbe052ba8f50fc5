package runtime

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// A worker whose claim finds a partition dry offers to take the next
// plain jobs enqueued there pushed, leased to it by their enqueue, on a
// pub/sub channel of its own: a pick-up in one hop, where a wake-up and
// then a claim take two (lua/lib_offer.lua, store.ClaimRequest.Offer).
// The offers are made on a single Redis server only: a cluster relays a
// message to its other nodes late (wake.go), and a node's PUBLISH counts
// only the subscribers it has itself.

// offerSize is how many jobs a claim that runs dry offers to take: the
// worker's slots shared among its partitions, at least one. The offers of
// several partitions may promise more than is free when a push comes
// (claims elsewhere took slots meanwhile): such a job is handed back.
func (w *Worker) offerSize() int {
	return max(1, (w.opts.Concurrency+len(w.parts)-1)/len(w.parts))
}

// offerKeep is how long the fetch loop remembers when it sent a claim that
// made an offer: a push comes within the offer's time (IdlePoll by the
// store's clock) of that claim; a later one is handed back.
func (w *Worker) offerKeep() time.Duration { return 2*w.opts.IdlePoll + 5*time.Second }

// offers are the claims whose offers may still push: when each was sent
// by the worker's clock (pushStart), by lease nonce, and in the order
// they were made, the oldest first, so that forgetting the old ones costs
// only what it forgets (every claim under load is recorded: thousands a
// second).
type offers struct {
	sent  map[string]time.Time
	order []madeOffer
}

type madeOffer struct {
	nonce string
	sent  time.Time
}

func newOffers() *offers { return &offers{sent: map[string]time.Time{}} }

// made records the offer of a claim sent at sent, forgetting those too
// old to push, and those made later than sent by the worker's clock
// (Options.Clock, which may step back): they would otherwise stop the
// forgetting at the head of the queue until the clock passed them again.
// A push of an offer forgotten is handed back, never lost.
func (o *offers) made(nonce string, sent time.Time, keep time.Duration) {
	old := 0
	for old < len(o.order) && (sent.Sub(o.order[old].sent) > keep || o.order[old].sent.After(sent)) {
		delete(o.sent, o.order[old].nonce)
		old++
	}
	o.order = append(o.order[old:], madeOffer{nonce, sent})
	o.sent[nonce] = sent
}

// when is when the claim of nonce was sent, if its offer is still known.
func (o *offers) when(nonce string) (time.Time, bool) {
	t, ok := o.sent[nonce]
	return t, ok
}

// takePush starts the jobs of a message on the worker's offer channel,
// each in a slot of its own. A job the worker will not run is handed back
// at once, to the front of its list, charging nothing: when no slot is
// free, when the worker is stopping (ctx has ended), when its offer is
// not known (too old) or its queue was resized.
func (w *Worker) takePush(ctx, jobsCtx context.Context, wk *wakeups, m *redis.Message, made *offers) {
	push, err := store.DecodePush(m.Payload, w.opts.WorkerID)
	i, known := wk.index[push.WakeChannel][push.Partition]
	if !known {
		// not of this worker's partitions: nothing to hand it back to;
		// the reaper takes its lease back when it runs out
		w.log.Warn("a job pushed to this worker names no partition it serves", "channel", push.WakeChannel,
			"partition", push.Partition, "err", err)
		return
	}
	p := w.parts[i]
	if err != nil {
		w.log.Warn("a pushed job does not decode; its lease runs out unused", "queue", p.Queue, "partition", p.Index, "err", err)
	}
	var back []*store.Job
	for _, j := range push.Jobs {
		sent, ok := made.when(store.LeaseNonce(j.LeaseID))
		if !ok || ctx.Err() != nil || w.staleQueue(p.Queue) || w.acquire(1) == 0 {
			back = append(back, j)
			continue
		}
		w.start(jobsCtx, p, j, w.pushStart(sent, push.OfferMade, j), false) // a push carries new jobs: no suspect
	}
	w.handBack(p, back)
}

// pushStart is when the lease of pushed job j began, by the worker's
// clock, or earlier: its offer's claim was sent at sent and ran later,
// when the store's clock read made; the lease began, by the store's
// clock, as long after that as its expiry is before its end. The two
// clocks need not agree, only run alike, as for a claim's leases
// (reckoned from the claim's send). A start after now cannot be (the
// lease began before its job came): the store's clock jumped, and sent,
// before the true start, stands.
func (w *Worker) pushStart(sent, made time.Time, j *store.Job) time.Time {
	lease := w.leaseFor(j.Kind)
	start := sent.Add(max(j.LeaseExpiry.Add(-lease).Sub(made), 0))
	if start.After(w.clk.Now()) {
		return sent
	}
	return start
}

// handBack releases pushed jobs the worker does not run, in the order an
// enqueue pushed them: each goes to the front of its list, no attempt or
// crash charged, and the workers are woken (the release's wake deletes
// the worker's offer with the idle flag). They are released newest
// first, one after the other, so that the oldest ends at the front.
// (Jobs of two enqueue calls come in two messages, released apart: the
// later call's may end in front, as jobs handed back at shutdown.)
// While Redis does not answer, each release is sent again only until the
// jobs' leases, all begun before this call, could have run out (the
// longest lease from now): not for a lease of its own after the one
// before it gave up, which held a stopping worker's Run a lease per job.
func (w *Worker) handBack(p keys.Partition, jobs []*store.Job) {
	if len(jobs) == 0 {
		return
	}
	until := w.clk.Now().Add(w.longestLease)
	w.handBacks.Go(func() {
		for _, j := range slices.Backward(jobs) {
			// at least one try (a Resend of 0 would be the longest lease again)
			resend := max(until.Sub(w.clk.Now()), time.Millisecond)
			res := w.ack(p, store.Ack{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeRelease,
				Resend: resend, GiveUp: until})
			id := keys.Ref{Partition: p, Local: j.Local}.String()
			w.log.Debug("handed back a pushed job", "queue", p.Queue, "job", id, "state", res.State, "err", res.Err)
			if w.sig.Settled.Enabled() {
				w.sig.Settled.Signal(testsignal.Settled{Worker: w.opts.WorkerID, JobID: id, Fence: j.Fence,
					By: testsignal.HandBack, State: res.State, Err: res.Err})
			}
		}
	})
}
