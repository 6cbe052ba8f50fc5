package chaos

// The trickle: ledger jobs enqueued one at a time on a queue of their own,
// slowly enough that its workers run dry and leave offers, so that many of
// these jobs (a fifth or so: an offer lasts for as many jobs as the worker
// has slots, and a padded job is never pushed) are pushed
// (lua/lib_offer.lua, runtime/push.go) while the faults go on: pushes to a
// worker killed, stopped past its lease, cut off or full, and enqueue
// calls whose replies are lost or doubled. The workers report what they
// start pushed and hand back, and the test compares it with what Redis
// published (checkPushes).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/store"
)

// trickleQueue holds the trickled jobs, served in each worker process by a
// worker of its own (trickleConcurrency slots, the ordinary crash limit).
const (
	trickleQueue       = "trickle"
	trickleConcurrency = 2
)

// trickleBase is the first trickled job's ledger number: their ledger
// fields (ledgerField) stay apart from the producer's jobs'.
const trickleBase = 1_000_000

// The pause between two trickled jobs: random in [trickleGap,
// 2*trickleGap).
const trickleGap = 30 * time.Millisecond

// trickleWait bounds how long the trickler waits for the trickled jobs'
// list to empty before it enqueues the next job all the same.
const trickleWait = time.Second

// trickleID is trickled job k's ID.
func trickleID(k int) string { return fmt.Sprintf("t%d", k) }

// trickler enqueues trickled job k, ID trickleID(k), ledger number
// trickleBase+k, one call each, through the proxy (go-redis re-sends a
// call whose reply the proxy dropped; a call that fails all the same is
// sent again by the trickler, the same ID, until it is acknowledged).
type trickler struct {
	c   *flow.Client
	rng *rand.Rand
	// ready, when set, reads (directly, not through the proxy) how many
	// trickled jobs wait in their list: a job is enqueued once none does,
	// or after trickleWait, so that the workers run dry and leave offers
	// however slowly they go (under -race, a trickled job can take longer
	// than the gap, and the list never emptied: no offer, no push)
	ready func(context.Context) (int64, error)

	mu   sync.Mutex
	ids  []string // acknowledged, job k at index k
	errs []error  // calls that never went through, and unexpected answers
}

// run trickles until ctx ends; the job being sent then is settled first.
func (tr *trickler) run(ctx context.Context) {
	for k := 0; ctx.Err() == nil; k++ {
		if tr.ready != nil {
			for end := time.Now().Add(trickleWait); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
				if n, err := tr.ready(ctx); err == nil && n == 0 {
					break
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
		n := trickleBase + k
		args := ledgerJob{N: n, Pad: padFor(n)}
		var err error
		for end := time.Now().Add(procTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			var res flow.Enqueued
			if res, err = tr.c.Enqueue(context.Background(), args, flow.WithQueue(trickleQueue), flow.WithID(trickleID(k))); err == nil {
				tr.mu.Lock()
				tr.ids = append(tr.ids, res.ID)
				tr.mu.Unlock()
				break
			}
			if !transient(err) {
				break
			}
		}
		if err != nil {
			tr.mu.Lock()
			tr.errs = append(tr.errs, fmt.Errorf("trickled job %d: %w", k, err))
			tr.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(trickleGap + time.Duration(tr.rng.Int64N(int64(trickleGap)))):
		}
	}
}

// result returns the acknowledged jobs' IDs and the errors.
func (tr *trickler) result() ([]string, []error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.ids, tr.errs
}

// pushWatch counts the pushes Redis publishes in namespace ns and the
// jobs they carry: a pattern subscription, made directly (not through the
// proxy), which PUBSUB NUMSUB does not count, so it draws no push to a
// channel no worker listens on. It re-subscribes after a Redis restart
// (what is published meanwhile it misses).
type pushWatch struct {
	n    atomic.Int64
	done chan struct{}
	sub  *redis.PubSub

	mu   sync.Mutex
	jobs map[string]bool // the jobs pushed, by ID in their partition
	bad  []error         // messages that do not decode
}

func watchPushes(ctx context.Context, t *testing.T, rdb *redis.Client, ns string) *pushWatch {
	t.Helper()
	w := &pushWatch{done: make(chan struct{}), sub: rdb.PSubscribe(ctx, globEscape(keys.PushChannel(ns, ""))+"*"), jobs: map[string]bool{}}
	if _, err := w.sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		for {
			msg, err := w.sub.ReceiveMessage(ctx)
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
					return
				}
				time.Sleep(50 * time.Millisecond) // Redis restarting: go-redis reconnects and subscribes again
				continue
			}
			if !strings.HasPrefix(msg.Channel, keys.PushChannel(ns, "")) {
				continue
			}
			w.n.Add(1)
			push, err := store.DecodePush(msg.Payload, "")
			w.mu.Lock()
			if err != nil {
				w.bad = append(w.bad, err)
			}
			for _, j := range push.Jobs {
				w.jobs[j.Local] = true
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the watch and returns the pushes seen, the jobs they carried
// and the messages that did not decode.
func (w *pushWatch) stop() (int64, map[string]bool, []error) {
	w.sub.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n.Load(), w.jobs, w.bad
}

// pushReports are the pushed jobs the worker processes reported (by ID in
// their partition): started by a handler under a pushed lease, and handed
// back (fleet.report).
type pushReports struct {
	mu                  sync.Mutex
	started, handedBack map[string]bool
}

func (r *pushReports) add(set *map[string]bool, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[localID(id)] = true
}

// localID is the ID in its partition of job ID id (queue:partition:local).
func localID(id string) string { return id[strings.LastIndexByte(id, ':')+1:] }

// checkPushes compares the jobs published as pushes with those the workers
// reported: every job a worker started pushed was published (unless the
// watch missed it while Redis restarted: counted, not failed), and each
// published job was started or handed back, or lost with its worker's
// connection (a SIGKILL, a cut, a stop or a Redis restart while it was in
// flight): a few, never a quarter. A worker that drops what is pushed to it
// loses them all; their leases run out and the jobs are charged crashes,
// which the other checks would not notice.
func checkPushes(t *testing.T, published map[string]bool, r *pushReports) (started, handedBack, lost, unseen int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.started {
		if !published[id] {
			unseen++
		}
	}
	for id := range published {
		switch {
		case r.started[id]:
			started++
		case r.handedBack[id]:
			handedBack++
		default:
			lost++
		}
	}
	if started == 0 || lost > max(pushLossFloor, len(published)/4) {
		t.Errorf("%d jobs pushed: %d started, %d handed back, %d lost (at most max(%d, a quarter) may be, with faulted workers)",
			len(published), started, handedBack, lost, pushLossFloor)
	}
	return started, handedBack, lost, unseen
}

// pushLossFloor is how many pushed jobs a run may lose whatever it
// pushed: each fault drops what is in flight to one worker.
const pushLossFloor = 8

// checkTrickled checks each acknowledged trickled job as the producer's
// ledger jobs (checkLedgerJob) and returns the effects expected of them.
func checkTrickled(ctx context.Context, t *testing.T, c *flow.Client, ids []string, st *ledgerStats) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for k, id := range ids {
		n := trickleBase + k
		checkLedgerJob(ctx, t, c, n, id, st)
		addLedgerFields(want, n)
	}
	return want
}
