package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// claim sends req for partition p, and with it the acks queued on the
// partition's ack lane that its loop has not sent yet (docs/design/
// ack-claims.md): under load a handler that returns frees its slot and
// queues its ack, and the fetch loop claims for the slot while the ack
// waits for the lane's call in flight; one call (store.AckClaim) does
// both, and the lane's next call has that much less to send. The claim
// waits for nothing: with no acks queued it goes alone at once.
//
// Each part of that call is recorded under the ID it has alone. So when
// the call fails the claim's error is returned, and the fetch loop sends
// the claim again alone by its ID, as any failed claim; the acks are sent
// again alone as their lane would (flushAcks, retried for up to a lease),
// on a goroutine of their own. Either is answered what the call did, if
// it ran. A claim sent again after an error (resend) goes alone.
func (w *Worker) claim(ctx context.Context, p keys.Partition, req store.ClaimRequest, resend bool) (store.ClaimResult, error) {
	if resend {
		return w.st.Claim(ctx, p, req)
	}
	reqs, lanes := w.acks.take(p, maxAckBatch)
	if len(reqs) == 0 {
		return w.st.Claim(ctx, p, req)
	}
	acks := make([]store.Ack, len(reqs))
	for i, r := range reqs {
		acks[i] = r.item
	}
	res, outboxed, cr, err := w.st.AckClaim(ctx, p, acks, &req)
	if outboxed > 0 {
		w.kickRelay()
	}
	if err == nil || (len(res) == len(acks) && res[len(res)-1].Err != err) {
		// the acks went through (an error then is the claim's reply alone)
		for i, r := range reqs {
			answer(r, res[i])
		}
		return cr, err
	}
	// their handlers, which wait for these answers, hold the worker's
	// shutdown until they have them (Worker.busy)
	go func() {
		for i, r := range w.flushAcks(lanes, p, acks) {
			answer(reqs[i], r)
		}
	}()
	return store.ClaimResult{}, err
}
