package runtime

import (
	"context"
	"errors"
	"sync"

	"github.com/sluicehq/sluice/internal/keys"
)

// errNotSent answers a write (a step commit or an ack) made when the
// worker's batcher is not running: its Run has returned, e.g. while a
// handler that ignored its cancellation was still at work.
var errNotSent = errors.New("sluice: worker stopped before the write was sent")

// batcher sends requests to Redis in opportunistic batches, one script
// call per partition: a lone request goes out at once, and whatever arrives
// while a call is in flight goes out together in the next one. Each caller
// still waits for exactly its own result, so a step or an ack costs its
// handler one round trip, while under load many share a call.
//
// Every request queued is answered, by a flush or, once the loop stops, by
// failed; a request made while no loop runs fails at once.
type batcher[T, R any] struct {
	reqs   chan *batchReq[T, R]
	max    int
	flush  func(ctx context.Context, p keys.Partition, items []T) []R // one result per item
	failed func(item T, err error) R                                  // the result of an item not sent

	// Callers queue under mu's read lock, so that once stop holds it no
	// request can join the queue it drains.
	mu       sync.RWMutex
	open     bool          // a loop runs
	stopping chan struct{} // closed when the loop stops: frees callers waiting for room
}

type batchReq[T, R any] struct {
	p    keys.Partition
	item T
	done chan R
}

func newBatcher[T, R any](max, queue int, flush func(context.Context, keys.Partition, []T) []R, failed func(T, error) R) *batcher[T, R] {
	return &batcher[T, R]{reqs: make(chan *batchReq[T, R], queue), max: max, flush: flush, failed: failed}
}

// do queues item and waits for its result.
func (b *batcher[T, R]) do(p keys.Partition, item T) R {
	req := &batchReq[T, R]{p: p, item: item, done: make(chan R, 1)}
	b.mu.RLock()
	if !b.open {
		b.mu.RUnlock()
		return b.failed(item, errNotSent)
	}
	select {
	case b.reqs <- req:
	case <-b.stopping:
		b.mu.RUnlock()
		return b.failed(item, errNotSent)
	}
	b.mu.RUnlock()
	return <-req.done
}

// start opens b to requests (before Run starts any job, so that none is
// turned away) and serves them on a goroutine of g until ctx is done.
func (b *batcher[T, R]) start(ctx context.Context, g *sync.WaitGroup) {
	b.mu.Lock()
	b.open, b.stopping = true, make(chan struct{})
	b.mu.Unlock()
	g.Go(func() { b.loop(ctx) })
}

// loop serves requests until ctx is done.
func (b *batcher[T, R]) loop(ctx context.Context) {
	defer b.stop()
	for {
		var first *batchReq[T, R]
		select {
		case <-ctx.Done():
			return
		case first = <-b.reqs:
		}
		if ctx.Err() != nil { // both were ready: a dead context sends nothing
			first.done <- b.failed(first.item, errNotSent)
			return
		}
		batch := map[keys.Partition][]*batchReq[T, R]{first.p: {first}}
	more:
		for n := 1; n < b.max; n++ {
			select {
			case r := <-b.reqs:
				batch[r.p] = append(batch[r.p], r)
			default:
				break more
			}
		}
		for p, reqs := range batch {
			items := make([]T, len(reqs))
			for i, r := range reqs {
				items[i] = r.item
			}
			for i, res := range b.flush(ctx, p, items) {
				reqs[i].done <- res
			}
		}
	}
}

// stop closes b to requests and fails those still queued, which no loop
// would ever take.
func (b *batcher[T, R]) stop() {
	close(b.stopping)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = false
	for {
		select {
		case r := <-b.reqs:
			r.done <- b.failed(r.item, errNotSent)
		default:
			return
		}
	}
}
