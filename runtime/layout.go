package runtime

import (
	"context"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// ErrLayoutMismatch: Options.Partitions gives a queue another partition
// count than Redis records; Run returns a *sluicetype.LayoutMismatchError
// naming the queue and both counts.
var ErrLayoutMismatch = sluicetype.ErrLayoutMismatch

// servedQueue is a queue the worker claims from: the layout it read at
// Run, and whether the registry has moved on since (a resize).
type servedQueue struct {
	layout store.Layout
	stale  atomic.Bool
}

// useLayouts reads (or registers) the layout of every queue the worker
// serves or has a partition count for, and builds the partitions it
// claims from. It also loads the rest of the registry, so that children
// spawned into other queues (and isolated attempts, which cannot ask)
// find their layouts without a round trip.
func (w *Worker) useLayouts(ctx context.Context) error {
	served := make(map[string]*servedQueue, len(w.opts.Queues))
	var parts []keys.Partition
	for q := range w.opts.Queues {
		lay, err := w.layouts.Use(ctx, q)
		if err != nil {
			return err
		}
		served[q] = &servedQueue{layout: lay}
		parts = append(parts, lay.Parts(w.opts.Namespace)...)
	}
	for q := range w.opts.Partitions {
		if _, err := w.layouts.Use(ctx, q); err != nil {
			return err
		}
	}
	if err := w.layouts.Load(ctx); err != nil {
		return err
	}
	w.served, w.parts, w.tel.parts = served, parts, parts
	return nil
}

// checkLayouts compares the layouts of the served queues with the
// registry's, in one round trip, on every maintenance pass. A queue that
// was resized since Run is stale: the worker stops claiming from it (its
// partitions are no longer the queue's) and logs an error once; it serves
// it again when restarted. Children it spawns into the queue are placed by
// the new layout.
func (w *Worker) checkLayouts(ctx context.Context) {
	queues := make([]string, 0, len(w.served))
	for q, sq := range w.served {
		if !sq.stale.Load() {
			queues = append(queues, q)
		}
	}
	if len(queues) == 0 {
		return
	}
	now, err := w.st.ReadLayouts(ctx, queues)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("reading the queue layouts failed", "err", err)
		}
		return
	}
	for _, q := range queues {
		sq := w.served[q]
		lay, ok := now[q]
		if ok && lay.Version == sq.layout.Version {
			continue
		}
		sq.stale.Store(true)
		if ok {
			w.layouts.Put(lay)
		}
		w.log.Error("queue layout changed since the worker started: it no longer claims from the queue; restart it",
			"queue", q, "partitions", sq.layout.Partitions, "version", sq.layout.Version,
			"registry_partitions", lay.Partitions, "registry_version", lay.Version, "registered", ok)
	}
}

// staleQueue reports whether the worker stopped claiming from queue
// because it was resized (checkLayouts).
func (w *Worker) staleQueue(queue string) bool {
	sq := w.served[queue]
	return sq != nil && sq.stale.Load()
}
