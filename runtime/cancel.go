package runtime

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/keys"
)

// ErrCancelled is the cause of an attempt's cancellation when an operator
// cancelled its job (admin.Client.CancelJob). It wraps ErrLeaseLost: the
// job is no longer the attempt's, and nothing the attempt writes to
// Sluice state is accepted.
var ErrCancelled = fmt.Errorf("sluice: job cancelled by an operator: %w", ErrLeaseLost)

// stateCancelled is the state renewal reports for a job an operator
// cancelled.
const stateCancelled = "cancelled"

// listenCancels cancels, as soon as the news arrives on the namespace's
// cancel channel, the attempts whose job an operator cancelled. It is a
// shortcut: renewal reports the lost lease anyway. stop ends the listener.
func (w *Worker) listenCancels(ctx context.Context) (stop func()) {
	ps := w.st.Client().Subscribe(ctx, keys.CancelChannel(w.opts.Namespace))
	// Wait for the confirmation, so that a cancellation published once the
	// worker is registered (heartbeat.go) is not missed; on failure go-redis
	// goes on subscribing in the background. Not for longer than a
	// renewal's interval (nor nodeTimeout): the renewals wait behind it,
	// and a connection that stays open and silent would hold them, and the
	// worker's own expiry of its leases, for ever.
	rctx, cancel := context.WithTimeout(ctx, min(nodeTimeout, w.opts.RenewInterval))
	defer cancel()
	if _, err := ps.Receive(rctx); err != nil && ctx.Err() == nil {
		w.log.Warn("subscribing to operator cancellations failed; renewal will report them", "err", err)
	}
	ch := ps.Channel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ch {
			w.cancelLease(m.Payload)
		}
	}()
	return func() {
		_ = ps.Close()
		<-done
	}
}

// cancelLease cancels the attempt holding lease, if this worker runs it.
func (w *Worker) cancelLease(lease string) {
	var hit *Attempt
	w.mu.Lock()
	for a := range w.inflight {
		if a.LeaseID == lease && !a.settled.Load() {
			hit = a
			break
		}
	}
	w.mu.Unlock()
	if hit != nil {
		w.log.Info("job cancelled by an operator; cancelling the attempt", "job", hit.ID, "fence", hit.Fence)
		hit.cancelled()
	}
}

// cancelled cancels the attempt with cause ErrCancelled.
func (a *Attempt) cancelled() {
	a.stop(ErrCancelled) // before LeaseLost closes, as in lose
	a.ctl.markLost()
}
