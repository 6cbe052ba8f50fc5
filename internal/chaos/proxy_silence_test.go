package chaos

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestProxySilence: once Silence is called, a request on a live
// connection never reaches Redis and its client hears nothing until its
// read timeout; a subscription hears nothing that is published; when the
// hold ends the subscription's connection is cut; a connection made after
// the call works throughout.
func TestProxySilence(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startRedis(t)
	direct := newClient(t, &redis.Options{Addr: srv.Addr()})
	p := startProxy(t, srv.Addr())
	ns := redistest.NewNamespace(t)
	key, channel := ns+":k", ns+":ch"

	rdb := newClient(t, &redis.Options{Addr: p.Addr(), PoolSize: 1, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	if err := rdb.Ping(ctx).Err(); err != nil { // the pool's one connection
		t.Fatal(err)
	}
	ps := rdb.Subscribe(ctx, channel)
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	const hold = 2 * time.Second
	silenced := time.Now()
	if n := p.Silence(hold); n != 2 {
		t.Fatalf("Silence = %d, want 2 (the pool's connection and the subscription's)", n)
	}
	var ne net.Error
	if err := rdb.Incr(ctx, key).Err(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("INCR on a silenced connection: %v, want a read timeout", err)
	}
	if n, err := direct.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s = %d, %v: the silenced INCR reached Redis", key, n, err)
	}

	// a connection made now works (the pool's one was dropped on its timeout)
	if n, err := rdb.Incr(ctx, key).Result(); err != nil || n != 1 {
		t.Errorf("INCR on a new connection = %d, %v; want 1", n, err)
	}
	if err := direct.Publish(ctx, channel, "lost").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveTimeout(ctx, 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("subscription during the silence got %v, %v; want a read timeout", m, err)
	}
	// no timeout: it hears of the cut when the hold ends
	_, err := ps.ReceiveTimeout(ctx, 0)
	if waited := time.Since(silenced); err == nil || waited < hold-100*time.Millisecond {
		t.Errorf("subscription's read after %s: %v; want an error once the %s hold ended", waited, err, hold)
	}
	if got := p.Silenced(); got != 2 {
		t.Errorf("Silenced = %d, want 2", got)
	}
}
