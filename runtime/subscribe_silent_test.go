package runtime_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// These tests cut a worker's pub/sub subscription silently: the TCP
// connection stays open and nothing comes back (a path that drops
// packets), where a reset would fail the read at once. A helper's audit
// found that the renewal loop waited for the cancel channel's
// confirmation with no bound, so no lease was ever renewed, no handler
// cancelled when its lease ran out, and Run never returned; and that a
// wake-up subscription silent at start kept Run from returning when its
// context ended.

// silentConn forwards to Redis until it is asked to write a SUBSCRIBE
// naming a channel that contains match. From then on it drops what it is
// given, and a read waits for the connection's read deadline, as a real
// socket does, or for its close.
type silentConn struct {
	net.Conn
	match    []byte
	went     chan<- struct{} // told when it goes silent
	silent   atomic.Bool
	mu       sync.Mutex
	deadline time.Time
	closed   chan struct{}
	once     sync.Once
}

func (c *silentConn) Write(b []byte) (int, error) {
	if !c.silent.Load() && bytes.Contains(bytes.ToLower(b), []byte("subscribe")) && bytes.Contains(b, c.match) {
		c.silent.Store(true)
		select {
		case c.went <- struct{}{}:
		default:
		}
	}
	if c.silent.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *silentConn) Read(b []byte) (int, error) {
	if !c.silent.Load() {
		return c.Conn.Read(b)
	}
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	var timeout <-chan time.Time
	if !d.IsZero() {
		t := time.NewTimer(time.Until(d))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	case <-timeout:
		return 0, os.ErrDeadlineExceeded
	}
}

func (c *silentConn) SetDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetDeadline(t)
}

func (c *silentConn) SetReadDeadline(t time.Time) error {
	c.setRead(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *silentConn) setRead(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

func (c *silentConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// silentSubscribeClient is a client of the shared Redis whose SUBSCRIBE
// naming a channel that contains match goes silent; the channel is told
// when one does.
func silentSubscribeClient(t *testing.T, match string) (*redis.Client, <-chan struct{}) {
	addr := shared.Client(t).(*redis.Client).Options().Addr
	went := make(chan struct{}, 1)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: func(ctx context.Context, network, a string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, a)
		if err != nil {
			return nil, err
		}
		return &silentConn{Conn: c, match: []byte(match), went: went, closed: make(chan struct{})}, nil
	}})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, went
}

type silentArgs struct{}

func (silentArgs) Kind() string { return "silent" }

// runStoppable runs w until stop is closed, and fails the test when Run does
// not return within limit of it.
func runStoppable(t *testing.T, w *runtime.Worker, stop <-chan struct{}, limit time.Duration) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	out := make(chan error, 1)
	go func() {
		<-stop
		cancel()
		select {
		case err := <-done:
			out <- err
		case <-time.After(limit):
			t.Errorf("Run did not return within %v of its context's end", limit)
			out <- nil
		}
	}()
	return out
}

// TestSilentCancelSubscriptionRenews: with the cancel channel's
// subscription silent, the worker still renews its leases: a handler
// that runs past several leases is not cancelled, its job stays leased,
// and shutdown hands it back, charged nothing.
func TestSilentCancelSubscriptionRenews(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rdb, _ := silentSubscribeClient(t, ":cancel")
	const lease = 2 * time.Second
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	reg := flow.NewRegistry()
	testkit.Must(t, flow.Register(reg, func(ctx context.Context, _ *flow.Job[silentArgs]) error {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}))
	id := e.Enqueue(silentArgs{})
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: e.NS, Lease: lease, RenewInterval: 300 * time.Millisecond,
		ShutdownWindow: time.Second, CancelGrace: 200 * time.Millisecond,
	})
	testkit.Must(t, err)
	stop := make(chan struct{})
	done := runStoppable(t, w, stop, 10*time.Second)
	testkit.Recv(t, started, "the handler to start")
	claimed := e.Job(id).LeaseExpiry
	select {
	case c := <-cause:
		t.Fatalf("the handler was cancelled (%v) while its worker was alive", c)
	case <-time.After(2*lease + time.Second):
	}
	if j := e.Job(id); j.State != flow.StateRunning || !j.LeaseExpiry.After(claimed) || j.CrashAttempt != 0 {
		t.Errorf("after two leases: %s, lease to %v (at claim %v), crash_attempt %d; want running, renewed, no crash",
			j.State, j.LeaseExpiry, claimed, j.CrashAttempt)
	}
	close(stop)
	<-done
	if j := e.Job(id); j.State != flow.StateAvailable || j.CrashAttempt != 0 || j.Attempt != 0 {
		t.Errorf("after shutdown: %s, attempt %d, crash_attempt %d; want handed back, charged nothing", j.State, j.Attempt, j.CrashAttempt)
	}
}

// TestSilentWakeSubscriptionStops: with the wake-up subscription silent
// as the worker starts, Run returns as soon as its context ends, not at
// the end of the confirmation's bound (10 s).
func TestSilentWakeSubscriptionStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rdb, went := silentSubscribeClient(t, ":wake:")
	w, err := runtime.NewWorker(rdb, flow.NewRegistry(), runtime.Options{Namespace: e.NS})
	testkit.Must(t, err)
	stop := make(chan struct{})
	done := runStoppable(t, w, stop, 3*time.Second)
	testkit.Recv(t, went, "the wake-up subscription to go silent")
	close(stop)
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil when its context ends while it starts", err)
	}
}
