package runtime

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
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
		w.relayPass(ctx)
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

// relayPass relays the outboxes of the partitions served, once.
func (w *Worker) relayPass(ctx context.Context) {
	for _, p := range w.parts {
		w.relayPartition(ctx, p)
	}
}

// relayPartition relays the outbox of p, once, and reports whether it
// read any entry.
func (w *Worker) relayPartition(ctx context.Context, p keys.Partition) (read bool) {
	after := ""
	for {
		res, err := w.st.RelayOutbox(ctx, p, after, relayLimit)
		read = read || res.Handled > 0
		w.reportDead(ctx, p, res.Dead)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("relaying the outbox failed", "queue", p.Queue, "partition", p.Index, "err", err)
		}
		// a full batch goes on after its last entry, past those it
		// held (they stay at the front), unless the call failed
		if res.Handled < relayLimit || err != nil && res.Held == 0 {
			return read
		}
		after = res.Last
	}
}

// finalRelayTimeout bounds the relay pass of a worker's shutdown.
const finalRelayTimeout = 5 * time.Second

// finalRelay relays, as a worker shuts down, what its last acks wrote to
// its partitions' outboxes (a child's end told to a parent in another
// queue, effects on keys in other slots): they kicked the relay loop,
// which the shutdown stops, most likely before it ran. Only workers that
// serve a partition relay its outbox: where this one was the last (a
// queue of children served by workers of their own, scaled to none once
// idle), the parent would wait for its child, ended, until a worker
// served the queue again. Two relayers of one outbox are safe
// (RelayOutbox); the pass is bounded, as Redis may be out of reach.
func (w *Worker) finalRelay(bg context.Context, end time.Time) {
	ctx, cancel := context.WithDeadline(bg, end)
	defer cancel()
	w.relayPass(ctx)
}
