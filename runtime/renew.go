package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/internal/testsignal"
)

func (w *Worker) renewLoop(ctx context.Context) {
	defer w.listenCancels(ctx)() // cancel.go
	reg := w.register(ctx)       // heartbeat.go
	defer reg.unregister(ctx)
	for n := 0; ; n++ {
		t := w.clk.NewTimer(w.opts.RenewInterval)
		w.sig.Renewed.Signal(testsignal.Pass{Worker: w.opts.WorkerID, N: n})
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
		w.renewAll(ctx)
		reg.beat(ctx)
	}
}

// renewAll renews every lease this worker holds, one round trip per
// partition, and cancels exactly the attempts whose lease is lost. When
// Redis cannot be reached, attempts whose lease has run out by the worker's
// own reckoning are cancelled too: the worker can no longer be sure it
// holds them.
//
// An attempt whose outcome is being acked is renewed as well, until the
// ack returns: an ack that waits (on a slow or briefly unreachable Redis)
// must not let the lease run out under it, or another worker would run
// the job again although it is done. Such an attempt has nothing left to
// cancel, so a lost lease there is only the ack's to report.
func (w *Worker) renewAll(ctx context.Context) {
	groups := map[keys.Partition][]*Attempt{}
	w.mu.Lock()
	for a := range w.inflight {
		groups[a.ref.Partition] = append(groups[a.ref.Partition], a)
	}
	w.mu.Unlock()
	for p, as := range groups {
		sent := w.clk.Now()
		rs := make([]store.Renewal, len(as))
		for i, a := range as {
			rs[i] = store.Renewal{Lease: a.storeLease(), Duration: a.leaseDuration()}
		}
		lost, err := w.st.Renew(ctx, p, rs)
		if err != nil {
			w.log.Warn("lease renewal failed", "queue", p.Queue, "err", err)
			for _, a := range as {
				a.mu.Lock()
				expired := sent.After(a.leaseEnd)
				a.mu.Unlock()
				if expired && !a.settled.Load() {
					a.lose()
				}
			}
			continue
		}
		gone := make(map[string]string, len(lost))
		for _, l := range lost {
			gone[l.LeaseID] = l.State
		}
		for _, a := range as {
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
			a.mu.Lock()
			a.leaseEnd = sent.Add(a.lease)
			a.mu.Unlock()
		}
	}
}

// lose cancels the attempt with cause ErrLeaseLost.
func (a *Attempt) lose() {
	// Cancel first: whoever wakes on LeaseLost must find the cause set.
	a.stop(ErrLeaseLost)
	a.ctl.markLost()
}

// stop cancels the attempt with cause and starts the grace watch.
func (a *Attempt) stop(cause error) {
	a.mu.Lock()
	c := a.cancel
	a.mu.Unlock()
	if c != nil {
		c(cause)
		a.watch()
	}
}
