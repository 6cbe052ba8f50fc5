package chaos

// The trickle: ledger jobs enqueued one at a time on a queue of their own,
// slowly enough that its workers run dry and leave offers, so that most of
// these jobs are pushed (lua/lib_offer.lua, runtime/push.go) while the
// faults go on: pushes to a worker killed, stopped past its lease, cut
// off or full, and enqueue calls whose replies are lost or doubled.

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

// trickleID is trickled job k's ID.
func trickleID(k int) string { return fmt.Sprintf("t%d", k) }

// trickler enqueues trickled job k, ID trickleID(k), ledger number
// trickleBase+k, one call each, through the proxy (go-redis re-sends a
// call whose reply the proxy dropped; a call that fails all the same is
// sent again by the trickler, the same ID, until it is acknowledged).
type trickler struct {
	c   *flow.Client
	rng *rand.Rand

	mu   sync.Mutex
	ids  []string // acknowledged, job k at index k
	errs []error  // calls that never went through, and unexpected answers
}

// run trickles until ctx ends; the job being sent then is settled first.
func (tr *trickler) run(ctx context.Context) {
	for k := 0; ctx.Err() == nil; k++ {
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

// pushWatch counts the pushes Redis publishes in namespace ns: a pattern
// subscription, made directly (not through the proxy), which PUBSUB
// NUMSUB does not count, so it draws no push to a channel no worker
// listens on. It re-subscribes after a Redis restart.
type pushWatch struct {
	n    atomic.Int64
	done chan struct{}
	sub  *redis.PubSub
}

func watchPushes(ctx context.Context, t *testing.T, rdb *redis.Client, ns string) *pushWatch {
	t.Helper()
	w := &pushWatch{done: make(chan struct{}), sub: rdb.PSubscribe(ctx, globEscape(keys.PushChannel(ns, ""))+"*")}
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
			if strings.HasPrefix(msg.Channel, keys.PushChannel(ns, "")) {
				w.n.Add(1)
			}
		}
	}()
	return w
}

// stop ends the watch and returns the pushes seen.
func (w *pushWatch) stop() int64 {
	w.sub.Close()
	<-w.done
	return w.n.Load()
}

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
