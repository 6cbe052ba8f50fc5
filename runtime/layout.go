package runtime

import (
	"context"
	"errors"
	"log/slog"
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

// useLayouts reads (or registers), at each Run, the layout of every queue
// the worker serves or has a partition count for, and builds the partitions it
// claims from. It also loads the rest of the registry, so that children
// spawned into other queues (and isolated attempts, which cannot ask)
// find their layouts without a round trip.
//
// A queue whose registry value is not a layout is that queue's fault
// alone: the worker does not serve it (it cannot know its partitions),
// logs an error naming it, and serves the others; a job spawned into it
// fails to enqueue. When none of the served queues can be read the worker
// has nothing to do, and Run returns their errors.
func (w *Worker) useLayouts(ctx context.Context) error {
	// read anew at each Run: a worker run again after its Run returned
	// (a restart) must not serve a queue by the layout of an earlier Run,
	// which a resize may have changed since (nor skip the check of its
	// configured counts against the registry)
	w.layouts.Forget()
	served := make(map[string]*servedQueue, len(w.opts.Queues))
	var parts []keys.Partition
	var unread []error // the served queues'
	logged := map[string]bool{}
	for q := range w.opts.Queues {
		lay, err := w.layouts.Use(ctx, q)
		if e := unreadable(err); e != nil {
			w.logUnreadable(ctx, slog.LevelError, e, "the worker does not claim from the queue")
			unread, logged[q] = append(unread, err), true
			continue
		}
		if err != nil {
			return err
		}
		served[q] = &servedQueue{layout: lay}
		parts = append(parts, lay.Parts(w.opts.Namespace)...)
	}
	if len(served) == 0 && len(unread) > 0 {
		return errors.Join(unread...)
	}
	for q := range w.opts.Partitions {
		_, err := w.layouts.Use(ctx, q)
		if e := unreadable(err); e != nil {
			if !logged[q] {
				w.logUnreadable(ctx, slog.LevelError, e, "jobs spawned into the queue fail to enqueue")
				logged[q] = true
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	err := w.layouts.Load(ctx)
	es, only := store.EntryErrors(err)
	if !only {
		return err
	}
	for _, e := range es {
		if !logged[e.Name] {
			w.logUnreadable(ctx, slog.LevelWarn, e, "jobs spawned into the queue fail to enqueue")
		}
	}
	w.served, w.parts, w.tel.parts = served, parts, parts
	return nil
}

// unreadable is err as the *store.EntryError of a queue whose registry
// value is not a layout, nil for any other error.
func unreadable(err error) *store.EntryError {
	var e *store.EntryError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// logUnreadable logs that queue e.Name's layout cannot be read, and what
// that costs.
func (w *Worker) logUnreadable(ctx context.Context, level slog.Level, e *store.EntryError, cost string) {
	w.log.Log(ctx, level, "queue layout in the registry cannot be read: "+cost+
		"; repair or resize the queue, then restart the worker", "queue", e.Name, "err", e.Err)
}

// checkLayouts compares the layouts of the served queues with the
// registry's, in one round trip, on every maintenance pass. A queue that
// was resized since Run is stale: the worker stops claiming from it (its
// partitions are no longer the queue's) and logs an error once; it serves
// it again when restarted. Children it spawns into the queue are placed by
// the new layout. A queue whose registry value is no longer a layout is
// stale too (the worker cannot tell whether its partitions still are the
// queue's), and the check of the others goes on.
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
	es, only := store.EntryErrors(err)
	if !only {
		if ctx.Err() == nil {
			w.log.Warn("reading the queue layouts failed", "err", err)
		}
		return
	}
	bad := make(map[string]bool, len(es))
	for _, e := range es { // the registry's value is no longer a layout
		w.served[e.Name].stale.Store(true)
		w.logUnreadable(ctx, slog.LevelError, e, "the worker no longer claims from the queue")
		bad[e.Name] = true
	}
	for _, q := range queues {
		if bad[q] {
			continue
		}
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
// because it was resized, or its layout turned unreadable (checkLayouts).
func (w *Worker) staleQueue(queue string) bool {
	sq := w.served[queue]
	return sq != nil && sq.stale.Load()
}
