package runtime

// Regression tests for two ways a worker hung: a write made after its
// batcher stopped waited for ever, and Run spun on a closed wake-up
// channel when its Redis client was closed under it. The package's
// TestMain fails the run if goroutines leak.

import (
	"context"
	"errors"
	"log/slog"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// hangBound is how long a call that must not block may take: a failure
// bound, generous for -race on 2 cores.
const hangBound = 10 * time.Second

// hangResult is a test batcher's result: the item, and the error of an
// item not sent.
type hangResult struct {
	item int
	err  error
}

// sent answers a test batcher's call: each item, sent.
func sent(items []int) []hangResult {
	out := make([]hangResult, len(items))
	for i, it := range items {
		out[i] = hangResult{item: it}
	}
	return out
}

// notSent is a test batcher's answer to an item not sent.
func notSent(it int, err error) hangResult { return hangResult{item: it, err: err} }

// TestHangBatcherStopped: a write made while the batcher's loop stops, or
// after it stopped, fails with errNotSent at once instead of blocking for
// ever; the writes the loop took are answered; a batcher started again
// serves again.
func TestHangBatcherStopped(t *testing.T) {
	t.Parallel()
	flushing := make(chan int, 8)
	release := make(chan struct{})
	b := newBatcher(1, 1,
		func(_ context.Context, _ keys.Partition, items []int) []hangResult {
			out := make([]hangResult, len(items))
			for i, it := range items {
				flushing <- it
				<-release
				out[i] = hangResult{item: it}
			}
			return out
		},
		notSent)
	results := make(chan hangResult, 8)
	do := func(item int) { results <- b.do(keys.Partition{}, item) }
	recvResult := func(what string) hangResult {
		t.Helper()
		select {
		case r := <-results:
			return r
		case <-time.After(hangBound):
			t.Fatalf("%s: do blocked", what)
		}
		panic("unreachable")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var g sync.WaitGroup
	b.start(ctx, &g)
	go do(1)
	if got := <-flushing; got != 1 { // the loop is busy with 1
		t.Fatalf("flushing %d, want 1", got)
	}
	go do(2) // fills the queue (size 1)
	go do(3) // waits for room, or is refused if the loop stopped first
	cancel()
	close(release)
	g.Wait()
	got := map[int]error{}
	for range 3 {
		r := recvResult("a write queued when the loop stopped")
		got[r.item] = r.err
	}
	if got[1] != nil {
		t.Errorf("write 1, taken before the stop: %v, want sent", got[1])
	}
	for _, it := range []int{2, 3} {
		if !errors.Is(got[it], errNotSent) {
			t.Errorf("write %d, left when the loop stopped: %v, want %v", it, got[it], errNotSent)
		}
	}

	go do(4)
	if r := recvResult("a write after the loop stopped"); !errors.Is(r.err, errNotSent) {
		t.Errorf("write after the stop: %v, want %v", r.err, errNotSent)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	b.start(ctx, &g)
	go do(5)
	if r := recvResult("a write after a restart"); r.err != nil || r.item != 5 {
		t.Errorf("write after a restart: %+v, want 5 sent", r)
	}
	if got := <-flushing; got != 5 { // buffered by the flush that answered
		t.Errorf("flushed %d, want 5", got)
	}
	cancel()
	g.Wait()
}

// noHandlers knows no kind.
type noHandlers struct{}

func (noHandlers) Handler(string) (Handler, bool) { return nil, false }

// TestHangClientClosed: Run, idle on its wake-up subscription, returns an
// error wrapping redis.ErrClosed soon after its Redis client is closed
// under it, instead of spinning on the closed wake-up channel.
func TestHangClientClosed(t *testing.T) {
	t.Parallel()
	srv, err := redisproc.StartServer() // the shared server is runtime_test's
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	clk := NewFakeClock(time.UnixMilli(time.Now().UnixMilli()))
	w, err := NewWorker(rdb, noHandlers{}, Options{
		Namespace: redistest.NewNamespace(t), Clock: clk, IdlePoll: time.Hour,
		MaintenanceInterval: time.Hour, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	sig := testsignal.NewWorker()
	ctx, cancel := context.WithCancel(testsignal.WithWorker(context.Background(), sig))
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	select {
	case <-sig.Idle.C(): // every partition dry: it waits for a wake-up
	case err := <-done:
		t.Fatalf("Run returned %v before it was idle", err)
	case <-time.After(hangBound):
		t.Fatal("the worker never waited for a wake-up")
	}

	_ = rdb.Close()
	select {
	case err := <-done:
		if !errors.Is(err, redis.ErrClosed) {
			t.Errorf("Run returned %v, want an error wrapping %v", err, redis.ErrClosed)
		}
	case <-time.After(hangBound):
		t.Fatal("Run did not return after its Redis client was closed")
	}
}

// TestBatcherPartitionWaitsAlone: while one partition's call hangs (its
// acks retried while Redis is unreachable, for up to a lease), another
// partition's writes go out and are answered; the hung partition's
// writes made meanwhile go out together once its call returns. Before,
// the loop made the calls one after another, and every partition waited
// for the hung one.
func TestBatcherPartitionWaitsAlone(t *testing.T) {
	t.Parallel()
	hung, other := keys.Partition{Queue: "q", Index: 0}, keys.Partition{Queue: "q", Index: 1}
	started := make(chan []int, 4)
	release := make(chan struct{})
	b := newBatcher(8, 8,
		func(_ context.Context, p keys.Partition, items []int) []hangResult {
			if p == hung {
				started <- append([]int(nil), items...)
				<-release
			}
			return sent(items)
		},
		notSent)
	ctx, cancel := context.WithCancel(context.Background())
	var g sync.WaitGroup
	b.start(ctx, &g)
	defer func() { cancel(); g.Wait() }()
	var once sync.Once
	unhang := func() { once.Do(func() { close(release) }) }
	defer unhang() // first, on a failure: the loop may be in the hung call
	results := make(chan hangResult, 8)
	go func() { results <- b.do(hung, 1) }()
	if got := <-started; len(got) != 1 || got[0] != 1 {
		t.Fatalf("the hung partition's first call: %v, want [1]", got)
	}
	go func() { results <- b.do(hung, 2) }()
	go func() { results <- b.do(other, 3) }()
	select {
	case r := <-results:
		if r.item != 3 || r.err != nil {
			t.Fatalf("answered %+v first, want the other partition's 3", r)
		}
	case <-time.After(hangBound):
		t.Fatalf("the other partition's write waited for the hung call")
	}
	unhang()
	if got := <-started; len(got) != 1 || got[0] != 2 {
		t.Fatalf("the hung partition's next call: %v, want [2]", got)
	}
	for range 2 {
		select {
		case r := <-results:
			if r.err != nil || (r.item != 1 && r.item != 2) {
				t.Fatalf("answered %+v", r)
			}
		case <-time.After(hangBound):
			t.Fatalf("the hung partition's writes were not answered once it returned")
		}
	}
}

// TestBatcherFullLaneHoldsUpNoOther: while one partition's call hangs and
// callers wait for room in its full queue, a partition's first write (its
// queue made then) and another partition's write are answered. Before,
// the caller waiting for room held the lock a new queue was made under,
// and every partition stalled behind the hung one.
func TestBatcherFullLaneHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	hung := keys.Partition{Queue: "q", Index: 0}
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	b := newBatcher(1, 1,
		func(_ context.Context, p keys.Partition, items []int) []hangResult {
			if p == hung {
				select {
				case entered <- struct{}{}:
				default:
				}
				<-release
			}
			return sent(items)
		},
		notSent)
	ctx, cancel := context.WithCancel(context.Background())
	var g sync.WaitGroup
	b.start(ctx, &g)
	defer func() { cancel(); g.Wait() }()
	defer close(release) // first: the loop may be in the hung call
	other := keys.Partition{Queue: "q", Index: 1}
	if r := b.do(other, 100); r.err != nil {
		t.Fatal(r.err)
	}
	for it := 1; it <= 4; it++ { // one in the call, one queued, the rest waiting for room
		go b.do(hung, it)
	}
	<-entered
	answered := make(chan hangResult, 2)
	go func() { answered <- b.do(keys.Partition{Queue: "q", Index: 2}, 5) }()
	go func() { answered <- b.do(other, 6) }()
	for range 2 {
		select {
		case r := <-answered:
			if r.err != nil {
				t.Errorf("write %d: %v", r.item, r.err)
			}
		case <-time.After(hangBound):
			t.Fatal("another partition's write waited behind the hung partition's full queue")
		}
	}
}

// TestBatcherRestartsUnderLoad: callers writing to many partitions while
// the batcher is started and stopped again and again each get exactly
// their own answer, sent or errNotSent, and never wait for ever (a caller
// that made its partition's queue as one run stopped and the next began
// could be left sending on no queue, and hold up the next run's writes).
func TestBatcherRestartsUnderLoad(t *testing.T) {
	t.Parallel()
	b := newBatcher(4, 2,
		func(_ context.Context, p keys.Partition, items []int) []hangResult {
			out := make([]hangResult, len(items))
			for i, it := range items {
				if it/1000 != p.Index {
					out[i] = hangResult{item: -1} // flushed on another partition's call
					continue
				}
				out[i] = hangResult{item: it}
			}
			return out
		},
		notSent)
	stop := make(chan struct{})
	var callers sync.WaitGroup
	for c := range 16 {
		callers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := (c + n) % 8
				item := p*1000 + n%1000
				got := make(chan hangResult, 1)
				go func() { got <- b.do(keys.Partition{Queue: "q", Index: p}, item) }()
				select {
				case r := <-got:
					if r.item != item {
						t.Errorf("wrote %d on partition %d, answered %+v", item, p, r)
						return
					}
				case <-time.After(hangBound):
					t.Errorf("write %d blocked", item)
					return
				}
			}
		})
	}
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		var g sync.WaitGroup
		b.start(ctx, &g)
		goruntime.Gosched()
		cancel()
		g.Wait()
	}
	close(stop)
	callers.Wait()
}
