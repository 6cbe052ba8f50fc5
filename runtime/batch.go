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
	reqs chan *batchReq[T, R]
	max  int
	// flush sends items, one result per item; items is the loop's, valid
	// only during the call.
	flush  func(ctx context.Context, p keys.Partition, items []T) []R
	failed func(item T, err error) R // the result of an item not sent
	// spare holds answered requests, each with its channel, for the next
	// do: a request and a channel per ack or step commit were a tenth of
	// what a worker allocated per job.
	spare sync.Pool

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
	req, _ := b.spare.Get().(*batchReq[T, R])
	if req == nil {
		req = &batchReq[T, R]{done: make(chan R, 1)}
	}
	req.p, req.item = p, item
	b.mu.RLock()
	if !b.open {
		b.mu.RUnlock()
		b.recycle(req)
		return b.failed(item, errNotSent)
	}
	select {
	case b.reqs <- req:
	case <-b.stopping:
		b.mu.RUnlock()
		b.recycle(req)
		return b.failed(item, errNotSent)
	}
	b.mu.RUnlock()
	res := <-req.done // the one answer it gets: the loop is done with it
	b.recycle(req)
	return res
}

// recycle keeps an answered request for another do, without its item.
func (b *batcher[T, R]) recycle(req *batchReq[T, R]) {
	var zero T
	req.p, req.item = keys.Partition{}, zero
	b.spare.Put(req)
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
	batch := map[keys.Partition][]*batchReq[T, R]{}
	var items []T
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
		clear(batch)
		batch[first.p] = []*batchReq[T, R]{first}
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
			items = items[:0]
			for _, r := range reqs {
				items = append(items, r.item)
			}
			res := b.flush(ctx, p, items)
			clear(items) // holds no payload past its call
			for i, r := range res {
				reqs[i].done <- r // after this, reqs[i] may be another do's
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
