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
// Each partition has a lane of its own: a queue and a loop, started at its
// first request. A partition whose calls fail and are retried (acks are,
// for up to a lease, while Redis is unreachable) holds up its own requests
// only; the other partitions' go out meanwhile.
//
// Every request queued is answered, by a flush or, once the loops stop, by
// failed; a request made while no loop runs fails at once.
type batcher[T, R any] struct {
	max, queue int // a call's items, a lane's queue
	// flush sends items, one result per item; items is the loop's, valid
	// only during the call.
	flush  func(ctx context.Context, p keys.Partition, items []T) []R
	failed func(item T, err error) R // the result of an item not sent
	// spare holds answered requests, each with its channel, for the next
	// do: a request and a channel per ack or step commit were a tenth of
	// what a worker allocated per job.
	spare sync.Pool

	// Callers queue under mu's read lock, held from the check that the
	// loops run to the request's place in its lane, so that once stop
	// holds the write lock no request can join the queues it drains, and
	// start cannot replace the lanes under a caller. Only start and stop
	// take the write lock (stop after freeing callers waiting for room).
	mu       sync.RWMutex
	open     bool            // the loops run
	stopping chan struct{}   // closed when the loops stop: frees callers waiting for room
	ctx      context.Context // the loops'
	g        *sync.WaitGroup // the loops are its goroutines
	// lanesMu guards lanes, which callers add to under mu's read lock: a
	// lane added never waits for a caller blocked on a full lane.
	lanesMu sync.Mutex
	lanes   map[keys.Partition]chan *batchReq[T, R]
}

type batchReq[T, R any] struct {
	item T
	done chan R
}

// maxLaneQueue caps a lane's queue: a worker has a lane per partition it
// writes to, each queue allocated in full, and a caller that finds its
// lane full waits for room (do), so a longer one saves nothing.
const maxLaneQueue = 4096

// laneQueue is the queue of each lane of a worker running concurrency jobs
// at once: room for a few requests per job, up to maxLaneQueue.
func laneQueue(concurrency int) int { return min(4*concurrency, maxLaneQueue) }

func newBatcher[T, R any](max, queue int, flush func(context.Context, keys.Partition, []T) []R, failed func(T, error) R) *batcher[T, R] {
	return &batcher[T, R]{max: max, queue: queue, flush: flush, failed: failed}
}

// do queues item and waits for its result.
func (b *batcher[T, R]) do(p keys.Partition, item T) R {
	req, _ := b.spare.Get().(*batchReq[T, R])
	if req == nil {
		req = &batchReq[T, R]{done: make(chan R, 1)}
	}
	req.item = item
	b.mu.RLock()
	if !b.open {
		b.mu.RUnlock()
		b.recycle(req)
		return b.failed(item, errNotSent)
	}
	lane := b.lane(p)
	select {
	case lane <- req:
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

// lane is partition p's queue, made with its loop at its first request.
// Its caller holds mu's read lock, with the loops running: the loop joins
// g while stop's goroutine, which waits for it, still runs.
func (b *batcher[T, R]) lane(p keys.Partition) chan *batchReq[T, R] {
	b.lanesMu.Lock()
	defer b.lanesMu.Unlock()
	lane := b.lanes[p]
	if lane == nil {
		lane = make(chan *batchReq[T, R], b.queue)
		b.lanes[p] = lane
		ctx := b.ctx
		b.g.Go(func() { b.loop(ctx, p, lane) })
	}
	return lane
}

// recycle keeps an answered request for another do, without its item.
func (b *batcher[T, R]) recycle(req *batchReq[T, R]) {
	var zero T
	req.item = zero
	b.spare.Put(req)
}

// start opens b to requests (before Run starts any job, so that none is
// turned away) and serves them on goroutines of g until ctx is done.
func (b *batcher[T, R]) start(ctx context.Context, g *sync.WaitGroup) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open, b.stopping, b.ctx, b.g = true, make(chan struct{}), ctx, g
	b.lanesMu.Lock()
	b.lanes = map[keys.Partition]chan *batchReq[T, R]{}
	b.lanesMu.Unlock()
	// joins g before any caller can add a lane's loop to it
	g.Go(func() {
		<-ctx.Done()
		b.stop()
	})
}

// loop serves partition p's requests, queued on lane, until ctx is done.
func (b *batcher[T, R]) loop(ctx context.Context, p keys.Partition, lane chan *batchReq[T, R]) {
	var reqs []*batchReq[T, R]
	var items []T
	for {
		var first *batchReq[T, R]
		select {
		case <-ctx.Done():
			return
		case first = <-lane:
		}
		if ctx.Err() != nil { // both were ready: a dead context sends nothing
			first.done <- b.failed(first.item, errNotSent)
			return
		}
		reqs = append(reqs[:0], first)
	more:
		for len(reqs) < b.max {
			select {
			case r := <-lane:
				reqs = append(reqs, r)
			default:
				break more
			}
		}
		items = items[:0]
		for _, r := range reqs {
			items = append(items, r.item)
		}
		res := b.flush(ctx, p, items)
		clear(items) // holds no payload past its call
		for i, r := range res {
			reqs[i].done <- r // after this, reqs[i] may be another do's
		}
		clear(reqs)
	}
}

// stop closes b to requests and fails those still queued, which no loop
// would ever take (a loop still in a call answers its own requests).
func (b *batcher[T, R]) stop() {
	close(b.stopping)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open = false
	b.lanesMu.Lock()
	defer b.lanesMu.Unlock()
	for _, lane := range b.lanes {
		for drained := false; !drained; {
			select {
			case r := <-lane:
				r.done <- b.failed(r.item, errNotSent)
			default:
				drained = true
			}
		}
	}
}
