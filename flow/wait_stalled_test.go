package flow_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/testkit"
)

// TestWaitHonoursContextWhenRedisStalls: Redis accepts connections but
// answers nothing (a stalled server, a half-open network path), and the
// client honours contexts (ContextTimeoutEnabled). Wait with a 200 ms
// context returns by then with the context's error. Before, it returned
// after 10 s: its return unsubscribed under the PubSub's lock, which the
// session's receive held while it connected (HELLO under the session's
// own context, up to a read timeout, retried; found by an audit).
func TestWaitHonoursContextWhenRedisStalls(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testkit.Must(t, err)
	conns := make(chan net.Conn, 64)
	t.Cleanup(func() {
		// the session, still connecting after Wait returned, ends with
		// its connections
		ln.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() { _, _ = io.Copy(io.Discard, c) }() // reads, never answers
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: "stalledwait"})
	testkit.Must(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(ctx, "default:0:somejob")
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait: %v, want the context's error", err)
	}
	if took > time.Second {
		t.Fatalf("Wait with a 200ms context returned after %v", took)
	}
}
