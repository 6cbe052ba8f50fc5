package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/sluicetype"
)

// Layouts is one process's view of the queue layouts it uses: each is read
// from the registry, or registered there, on the queue's first use and
// then kept, so that no enqueue and no job pays a round trip for it (a
// layout changes only through a resize, which running processes learn of
// when they restart; a worker also checks on its maintenance pass). It is
// safe for concurrent use.
type Layouts struct {
	st *Store
	// configured are the process's partition counts (its options): the
	// count a new queue is registered with, and a check of an existing one.
	configured map[string]int
	// fixed: no Redis to ask (an isolated child); only known is known,
	// unless guess is set.
	fixed bool
	// guess answers one partition for a queue not known (OfflineLayouts).
	guess bool

	mu    sync.Mutex
	known map[string]Layout
	// named is set once the namespace is in the set of namespaces.
	named atomic.Bool
}

// NewLayouts returns an empty view on st's registry; configured (which it
// copies) maps queues to the partition counts the process was configured
// with.
func NewLayouts(st *Store, configured map[string]int) *Layouts {
	return &Layouts{st: st, configured: maps.Clone(configured), known: map[string]Layout{}}
}

// FixedLayouts is a view that knows the partition counts of counts and
// never asks Redis: the view of an isolated child, which has no
// connection.
func FixedLayouts(st *Store, counts map[string]int) *Layouts {
	l := &Layouts{st: st, fixed: true, known: map[string]Layout{}}
	for q, n := range counts {
		l.known[q] = Layout{Queue: q, Partitions: n}
	}
	return l
}

// OfflineLayouts is a view that answers one partition for every queue,
// without I/O: for checking a job that will be placed later (a
// schedule's template), never for placing one.
func OfflineLayouts(st *Store) *Layouts {
	return &Layouts{st: st, fixed: true, guess: true, known: map[string]Layout{}}
}

// Cached answers queue's layout if the process knows it, without I/O.
func (l *Layouts) Cached(queue string) (Layout, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lay, ok := l.known[queue]
	return lay, ok
}

// Counts are the partition counts of every queue the process knows (none
// for a nil view).
func (l *Layouts) Counts() map[string]int {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.known))
	for q, lay := range l.known {
		out[q] = lay.Partitions
	}
	return out
}

// Forget drops every layout the view keeps, so that the next Use of a
// queue reads it from the registry again (and checks it against the
// configured count): a worker's Run does, since a queue may have been
// resized while the worker was not running.
func (l *Layouts) Forget() {
	l.mu.Lock()
	clear(l.known)
	l.mu.Unlock()
}

// Put makes lay the process's layout of its queue.
func (l *Layouts) Put(lay Layout) {
	l.mu.Lock()
	l.known[lay.Queue] = lay
	l.mu.Unlock()
}

// Use answers queue's layout for a process that puts jobs in it or
// serves it: the one it knows, else the registry's, else the one it
// registers there (its configured count, or 1). A configured count other
// than the registry's is a *sluicetype.LayoutMismatchError; a registry
// value that is not a layout an *EntryError naming the queue
// (ErrMalformed), and nothing is written over it. The first use of a
// queue costs one round trip (and the first of the process another, to
// record its namespace); later ones none.
func (l *Layouts) Use(ctx context.Context, queue string) (Layout, error) {
	if lay, ok := l.Cached(queue); ok {
		return lay, nil
	}
	if l.fixed && l.guess {
		return Layout{Queue: queue, Partitions: 1}, nil
	}
	if l.fixed {
		return Layout{}, fmt.Errorf("%w: %q: its layout is not known to an isolated attempt (list the queue in its worker's Options.Partitions)",
			sluicetype.ErrQueueNotFound, queue)
	}
	n, ok := l.configured[queue]
	if !ok {
		n = 1
	}
	lay, _, err := l.st.RegisterLayout(ctx, queue, n)
	if err != nil {
		return Layout{}, entryError(queue, err)
	}
	if err := l.check(lay); err != nil {
		return Layout{}, err
	}
	if !l.named.Load() {
		if err := l.st.AddNamespace(ctx); err != nil {
			return Layout{}, err
		}
		l.named.Store(true)
	}
	l.Put(lay)
	return lay, nil
}

// Lookup reads queue's layout from the registry (every call: for
// operators, who must see a resize at once) and keeps it; a queue with
// none is sluicetype.ErrQueueNotFound, a configured count other than the
// registry's a *sluicetype.LayoutMismatchError, and a registry value that
// is not a layout an *EntryError naming the queue.
func (l *Layouts) Lookup(ctx context.Context, queue string) (Layout, error) {
	if l.fixed {
		return l.Use(ctx, queue)
	}
	lay, err := l.st.ReadLayout(ctx, queue)
	if err != nil {
		return Layout{}, entryError(queue, err)
	}
	if err := l.check(lay); err != nil {
		return Layout{}, err
	}
	l.Put(lay)
	return lay, nil
}

// Refresh reads queue's layout from the registry and keeps it, as Lookup
// does, but does not compare it with the process's configured count: for
// a caller that must place jobs as a process that reads the registry now
// places them (a scheduler's ticks), which a process configured with a
// count a resize since changed does too, until it restarts.
func (l *Layouts) Refresh(ctx context.Context, queue string) (Layout, error) {
	if l.fixed {
		return l.Use(ctx, queue)
	}
	lay, err := l.st.ReadLayout(ctx, queue)
	if err != nil {
		return Layout{}, entryError(queue, err)
	}
	l.Put(lay)
	return lay, nil
}

// Retired is what an enqueue to partition p, placed there by a count of
// used partitions, answered with ErrRetired (the queue shrank, taking p
// away) becomes: it reads the queue's layout again and keeps it, so that
// the next enqueue places its jobs by the new count, and returns a
// *sluicetype.LayoutMismatchError (Resized, unless the process is
// configured with the old count) that says so. (used is the caller's:
// when a shrink retires several partitions, the first of their refusals
// to arrive here updates the count kept.)
func (l *Layouts) Retired(ctx context.Context, p keys.Partition, used int) error {
	lay, err := l.Lookup(ctx, p.Queue)
	if err != nil {
		return err // the configured count no longer matches, or no Redis
	}
	if p.Index < lay.Partitions { // the resize that retires p has not yet recorded its count
		return fmt.Errorf("%w: partition %d of queue %q of namespace %q is being taken away by a resize: "+
			"nothing was added; enqueue again", sluicetype.ErrLayoutMismatch, p.Index, p.Queue, l.st.NS())
	}
	return &sluicetype.LayoutMismatchError{Namespace: l.st.NS(), Queue: p.Queue, Configured: used,
		Recorded: lay.Partitions, Resized: true}
}

// Load reads every layout of the registry (at most MaxQueuesListed) into
// the view, keeping those it knows: a worker's spawned children and
// isolated attempts then find them without asking. A queue whose registry
// value is not a layout is that queue's fault alone: Load keeps every
// other layout and returns an error joining one *EntryError per such
// queue (EntryErrors reads them); any other error, with nothing loaded.
func (l *Layouts) Load(ctx context.Context) error {
	all, err := l.st.ListLayouts(ctx)
	if _, only := EntryErrors(err); !only {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lay := range all {
		if _, ok := l.known[lay.Queue]; !ok && l.check(lay) == nil {
			l.known[lay.Queue] = lay
		}
	}
	return err
}

// entryError is err, from reading queue's registry entry, as an
// *EntryError when it says the value is not a layout (ErrMalformed): the
// queue's fault, not the registry's nor Redis's.
func entryError(queue string, err error) error {
	if errors.Is(err, ErrMalformed) {
		return &EntryError{Name: queue, Err: err}
	}
	return err
}

// check compares lay with the process's configured count of its queue.
func (l *Layouts) check(lay Layout) error {
	if n, ok := l.configured[lay.Queue]; ok && n != lay.Partitions {
		return &sluicetype.LayoutMismatchError{Namespace: l.st.NS(), Queue: lay.Queue, Configured: n, Recorded: lay.Partitions}
	}
	return nil
}
