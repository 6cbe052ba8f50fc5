package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestWaitReturnsWhenRedisClientClosed: a Wait in progress when the
// caller closes its Redis client (which stays the caller's: Sluice never
// closes it) returns an error wrapping redis.ErrClosed, as the worker's
// Run does, instead of waiting for ever on a client that never answers
// again (its context without a deadline, as a process's shutdown leaves
// it). A helper's audit found it waiting until its context ended: a
// closed client's error was taken for Redis being out of reach, retried,
// and nothing woke the waiter to try.
func TestWaitReturnsWhenRedisClientClosed(t *testing.T) {
	t.Parallel()
	rdb := env.Server.Client()
	direct := realRedis(t)
	c, ns := waitClient(t, rdb, nil, 20*time.Millisecond)
	id := enqueueID(t, c, squareJob{N: 3})
	out := waitAsync(context.Background(), c, id)
	awaitWatched(t, direct, ns, id)
	testkit.Must(t, rdb.Close())
	got := testkit.Recv(t, out, "Wait to return once its Redis client is closed")
	if !errors.Is(got.err, redis.ErrClosed) {
		t.Fatalf("Wait returned %v, %v; want an error wrapping redis.ErrClosed", got.info, got.err)
	}
}
