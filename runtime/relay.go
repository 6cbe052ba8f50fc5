package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/testsignal"
)

// relayLimit bounds the outbox entries one relay call handles.
const relayLimit = 256

// kickRelay asks the relay loop to run now: a commit just wrote to an
// outbox.
func (w *Worker) kickRelay() {
	select {
	case w.relayKick <- struct{}{}:
	default:
	}
}

// relayLoop relays the outboxes of the partitions served: effects on keys
// in other cluster slots and notifications to parents in other partitions.
// It runs at start, when a commit wrote to an outbox and on every
// maintenance tick, so entries left by a worker that died after its commit
// are relayed too.
func (w *Worker) relayLoop(ctx context.Context) {
	for n := 1; ; n++ {
		for _, p := range w.parts {
			for {
				res, err := w.st.RelayOutbox(ctx, p, relayLimit)
				w.reportDead(ctx, p, res.Dead)
				if err != nil {
					if ctx.Err() == nil {
						w.log.Warn("relaying the outbox failed", "queue", p.Queue, "partition", p.Index, "err", err)
					}
					break
				}
				if res.Handled < relayLimit {
					break
				}
			}
		}
		t := w.clk.NewTimer(w.opts.MaintenanceInterval)
		w.sig.Relayed.Signal(testsignal.Pass{Worker: w.opts.WorkerID, N: n})
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.relayKick:
		case <-t.C():
		}
		t.Stop()
	}
}
