package runtime

import (
	"context"

	"github.com/sluicehq/sluice/internal/keys"
)

// batcher sends requests to Redis in opportunistic batches, one script
// call per partition: a lone request goes out at once, and whatever arrives
// while a call is in flight goes out together in the next one. Each caller
// still waits for exactly its own result, so a step or an ack costs its
// handler one round trip, while under load many share a call.
type batcher[T, R any] struct {
	reqs  chan *batchReq[T, R]
	max   int
	flush func(ctx context.Context, p keys.Partition, items []T) []R // one result per item
}

type batchReq[T, R any] struct {
	p    keys.Partition
	item T
	done chan R
}

func newBatcher[T, R any](max, queue int, flush func(context.Context, keys.Partition, []T) []R) *batcher[T, R] {
	return &batcher[T, R]{reqs: make(chan *batchReq[T, R], queue), max: max, flush: flush}
}

// do queues item and waits for its result.
func (b *batcher[T, R]) do(p keys.Partition, item T) R {
	req := &batchReq[T, R]{p: p, item: item, done: make(chan R, 1)}
	b.reqs <- req
	return <-req.done
}

// loop serves requests until ctx is done.
func (b *batcher[T, R]) loop(ctx context.Context) {
	for {
		var first *batchReq[T, R]
		select {
		case <-ctx.Done():
			return
		case first = <-b.reqs:
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
