package runtime

import (
	"testing"
	"time"

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

// TestRenewIntervalDefaultPositive: the shortest lease accepted, 1ms,
// still gets a renewal interval above zero by default (a third of it).
func TestRenewIntervalDefaultPositive(t *testing.T) {
	for _, o := range []Options{
		{Lease: time.Millisecond},
		{KindLease: map[string]time.Duration{"x": time.Millisecond}},
	} {
		d, err := o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if d.RenewInterval <= 0 || d.RenewInterval >= time.Millisecond {
			t.Errorf("%+v: RenewInterval %s, want in (0, 1ms)", o, d.RenewInterval)
		}
	}
}

// handlerMap is Handlers from a map.
type handlerMap map[string]Handler

func (m handlerMap) Handler(kind string) (Handler, bool) {
	h, ok := m[kind]
	return h, ok
}
