package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/runtime"
)

// brokenSubs is a go-redis hook that fails the claims of one partition
// once armed (holding those sent with a deadline until it, as a silent
// node), and can cut the client's subscription connections and refuse
// new connections for a while, as a network blip does.
type brokenSubs struct {
	prefix   string
	armed    atomic.Bool
	failed   atomic.Int64
	refuse   atomic.Bool
	mu       sync.Mutex
	subConns []net.Conn
}

// subConn marks itself a subscription's connection at its first SUBSCRIBE.
type subConn struct {
	net.Conn
	b    *brokenSubs
	once sync.Once
}

func (c *subConn) Write(p []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(p), []byte("subscribe")) {
		c.once.Do(func() {
			c.b.mu.Lock()
			c.b.subConns = append(c.b.subConns, c.Conn)
			c.b.mu.Unlock()
		})
	}
	return c.Conn.Write(p)
}

func (b *brokenSubs) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if b.refuse.Load() {
			return nil, testkit.ErrInjected
		}
		cn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &subConn{Conn: cn, b: b}, nil
	}
}

func (b *brokenSubs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (b *brokenSubs) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if !b.armed.Load() || len(args) < 4 || !lua.Claim.Is(cmd.Name(), fmt.Sprint(args[1])) ||
			!strings.HasPrefix(fmt.Sprint(args[3]), b.prefix) {
			return next(ctx, cmd)
		}
		b.failed.Add(1)
		if _, ok := ctx.Deadline(); ok {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		cmd.SetErr(testkit.ErrInjected)
		return testkit.ErrInjected
	}
}

// cut closes the subscriptions' connections and refuses new ones for d.
func (b *brokenSubs) cut(d time.Duration) {
	b.refuse.Store(true)
	b.mu.Lock()
	for _, c := range b.subConns {
		_ = c.Close()
	}
	b.mu.Unlock()
	time.AfterFunc(d, func() { b.refuse.Store(false) })
}

// TestPushesBufferedAtWithdrawAreHandedBack: jobs pushed to a stopping
// worker after its fetch loop ended (while it sent a failed claim again)
// wait in its subscription's buffer for the withdrawal of its offers.
// When the withdrawal's UNSUBSCRIBE fails (the subscription's connection
// cut, and not yet back), those jobs, already received, are still
// handed back, nothing charged, rather than left leased to a worker that
// has stopped until the reaper charges each a crash.
func TestPushesBufferedAtWithdrawAreHandedBack(t *testing.T) {
	t.Parallel()
	rdb := shared.Client(t)
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{})}
	hook := &brokenSubs{prefix: keys.Partition{NS: e.NS, Queue: "b"}.Prefix()}
	rdb.AddHook(hook)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, job *flow.Job[workArgs]) error { return nil }))
	dry := e.Sig.Dry.Subscribe()
	defer dry.Close()
	w := e.StartWorker(reg, runtime.Options{Concurrency: 4, Queues: map[string]int{"a": 1, "b": 1},
		ShutdownWindow: 100 * time.Millisecond, IdlePoll: time.Hour, MaintenanceInterval: time.Hour, Logger: testkit.Quiet})
	seen := map[string]bool{}
	for len(seen) < 2 {
		d := dry.WaitFor(t, func(d testsignal.Dry) bool { return d.Worker == w.ID() })
		seen[d.Queue] = true
	}
	// a claim of b fails: the stopping worker sends it again, held 2 s
	hook.armed.Store(true)
	e.Enqueue(workArgs{N: 9}, flow.WithQueue("b"), flow.WithPriority(2)) // listed: a wake-up and a claim
	redistest.Within(t, waitTimeout, "a claim of b to fail", func() (bool, string) {
		return hook.failed.Load() > 0, ""
	})
	w.Cancel()
	time.Sleep(300 * time.Millisecond) // the fetch loop has ended; its claim of b is held
	res, err := e.Client.EnqueueMany(context.Background(),
		flow.Item{Args: workArgs{N: 1}, Opts: []flow.EnqueueOption{flow.WithQueue("a")}},
		flow.Item{Args: workArgs{N: 2}, Opts: []flow.EnqueueOption{flow.WithQueue("a")}})
	testkit.Must(t, err)
	for _, r := range res {
		if j := e.Job(r.ID); j.State != flow.StateRunning {
			t.Fatalf("%s is %s, want running: pushed to the stopping worker's offer", r.ID, j.State)
		}
	}
	time.Sleep(200 * time.Millisecond) // the push is in the subscription's buffer
	hook.cut(3 * time.Second)
	select {
	case <-w.Done():
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
	}
	hook.armed.Store(false)
	for _, r := range res {
		checkSummary(t, r.ID, e.Job(r.ID), summary{State: flow.StateAvailable, Fence: 1})
	}
}
