package runtime

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestLaneQueueCapped: each batcher lane (one per partition) queues a few
// requests per job up to maxLaneQueue: sized by Concurrency alone, a lane
// of a worker at MaxConcurrency held 4M requests, allocated in full per
// partition, and a Concurrency near math.MaxInt wrapped to a negative
// size that panicked at the first ack.
func TestLaneQueueCapped(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never used
	defer rdb.Close()
	for c, want := range map[int]int{1: 4, 50: 200, 1024: 4096, MaxConcurrency: 4096} {
		w, err := NewWorker(rdb, handlerMap{}, Options{Concurrency: c})
		if err != nil {
			t.Fatal(err)
		}
		if w.acks.queue != want || w.checkpoints.queue != want {
			t.Errorf("Concurrency %d: lane queues %d (acks), %d (checkpoints), want %d",
				c, w.acks.queue, w.checkpoints.queue, want)
		}
	}
}

// handlerMap is Handlers from a map.
type handlerMap map[string]Handler

func (m handlerMap) Handler(kind string) (Handler, bool) {
	h, ok := m[kind]
	return h, ok
}
