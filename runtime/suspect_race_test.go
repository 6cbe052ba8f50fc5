package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// barrierClaims holds the first claim of each of two prefixes until both
// are in flight (two Workers' claims out at once, each sent while no
// suspect ran), then lets them go; it counts every claim per prefix.
type barrierClaims struct {
	prefixes [2]string
	mu       sync.Mutex
	entered  [2]bool
	both     chan struct{}
	counts   [2]atomic.Int64
}

func (h *barrierClaims) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *barrierClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *barrierClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) >= 4 && lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) {
			for i, p := range h.prefixes {
				if !strings.HasPrefix(fmt.Sprint(args[3]), p) {
					continue
				}
				h.counts[i].Add(1)
				h.mu.Lock()
				first := !h.entered[i]
				h.entered[i] = true
				if h.entered[0] && h.entered[1] {
					select {
					case <-h.both:
					default:
						close(h.both)
					}
				}
				h.mu.Unlock()
				if first {
					select {
					case <-h.both:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
		}
		return next(ctx, cmd)
	}
}

// TestTwoWorkersLeaseSuspectsAtOnce: two Workers of one process each
// lease a suspect in claims sent at once (no suspect running). Exactly one
// runs; the other is handed back, charged nothing, not claimed in a tight
// loop meanwhile, and runs at once when the first ends (IdlePoll is long:
// the held wake-up, not the poll, must bring it).
func TestTwoWorkersLeaseSuspectsAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	hook := &barrierClaims{both: make(chan struct{})}
	hook.prefixes[0] = keys.Partition{NS: e.NS, Queue: "qa", Index: 0}.Prefix()
	hook.prefixes[1] = keys.Partition{NS: e.NS, Queue: "qb", Index: 0}.Prefix()

	type run struct {
		id string
		n  int
	}
	running := testkit.Chan[run]()
	release := map[string]chan struct{}{}
	var relMu sync.Mutex
	rel := func(id string) chan struct{} {
		relMu.Lock()
		defer relMu.Unlock()
		if release[id] == nil {
			release[id] = make(chan struct{})
		}
		return release[id]
	}
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[gateArgs]) error {
		running <- run{job.ID, job.CrashAttempt}
		select {
		case <-rel(job.ID):
		case <-ctx.Done():
		}
		return nil
	}))
	ida := e.Enqueue(gateArgs{N: 1}, flow.WithQueue("qa"))
	idb := e.Enqueue(gateArgs{N: 2}, flow.WithQueue("qb"))
	for _, id := range []string{ida, idb} {
		ref, _ := keys.ParseRef(e.NS, id)
		testkit.Must(t, e.RDB.HSet(context.Background(), ref.Job(ref.Local), "c", "1").Err())
	}
	e.RDB.AddHook(hook)
	var relAll sync.Once
	t.Cleanup(func() {
		relAll.Do(func() {
			for _, id := range []string{ida, idb} {
				close(rel(id))
			}
		})
	})
	o := func(q string) runtime.Options {
		return runtime.Options{CrashDelay: noCrashDelay, Queues: map[string]int{q: 1}, Concurrency: 2, IdlePoll: 20 * time.Second}
	}
	e.startWorker(reg, o("qa"))
	e.startWorker(reg, o("qb"))
	first := testkit.Recv(t, running, "a suspect to run")
	other, oi := idb, 1
	if first.id == idb {
		other, oi = ida, 0
	}
	before := hook.counts[oi].Load()
	select {
	case r := <-running:
		t.Fatalf("two suspects side by side in one process: %s ran while %s ran", r.id, first.id)
	case <-time.After(1 * time.Second):
	}
	claims := hook.counts[oi].Load() - before
	t.Logf("claims of the other Worker in the 1 s the first suspect ran: %d", claims)
	if claims > 30 {
		t.Errorf("the other Worker sent %d claims in 1 s while the first suspect ran: a tight claim loop", claims)
	}
	j := e.Job(other)
	t.Logf("held suspect: state %s attempt %d crash_attempt %d", j.State, j.Attempt, j.CrashAttempt)
	if j.State != "available" || j.Attempt != 0 || j.CrashAttempt != 1 {
		t.Errorf("handed-back suspect: state %s attempt %d crash_attempt %d, want available 0 1 (nothing charged)", j.State, j.Attempt, j.CrashAttempt)
	}
	close(rel(first.id))
	begin := time.Now()
	select {
	case r := <-running:
		if r.id != other {
			t.Fatalf("ran %s, want %s", r.id, other)
		}
		t.Logf("the held suspect ran %v after the first ended", time.Since(begin))
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("the held suspect ran only %v after the first ended", d)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the handed-back suspect %s did not run within 5 s of the first ending (state %s)", other, e.Job(other).State)
	}
	relAll.Do(func() { close(rel(other)) })
	_ = context.Background
}
