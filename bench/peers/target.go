package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/bench/harness"
	"github.com/sluicehq/sluice/internal/redisproc"
)

// target is the Redis both systems are measured on, and the clients the
// asynq side uses there.
//
// As in the Sluice program, producers and the asynq server get separate
// clients (separate connection pools, as separate processes would have);
// a third client waits for acks and cleans up.
type target struct {
	url      string // given to the Sluice program
	addr     string
	producer *redis.Client
	worker   *redis.Client
	admin    *redis.Client
	server   *redisproc.Server // nil for a Redis we did not start
}

// connect uses the Redis at url, or when url is empty starts a private
// redis-server on a free port. producers is how many connections the
// producers' client opens up front.
func connect(ctx context.Context, url string, producers int) (*target, error) {
	t := &target{url: url}
	if url == "" {
		srv, err := redisproc.StartServer()
		if err != nil {
			return nil, fmt.Errorf("starting redis-server: %w", err)
		}
		t.server, t.url = srv, "redis://"+srv.Addr()
	}
	opts, err := redis.ParseURL(t.url)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	t.addr = opts.Addr
	popts := *opts
	popts.PoolSize = max(producers, 10*goruntime.GOMAXPROCS(0))
	t.producer = redis.NewClient(&popts)
	t.worker = redis.NewClient(opts)
	t.admin = redis.NewClient(opts)
	// Open the producers' connections now, so that no run pays for them.
	if err := harness.WarmPool(ctx, t.producer, producers); err != nil {
		t.close()
		return nil, fmt.Errorf("redis at %s: %w", t.addr, err)
	}
	return t, nil
}

// close closes the clients and stops the server we started, if any.
func (t *target) close() {
	for _, c := range []*redis.Client{t.producer, t.worker, t.admin} {
		if c != nil {
			_ = c.Close()
		}
	}
	if t.server != nil {
		_ = t.server.Close()
	}
}

// asynqQueues is asynq's set of every queue name it has seen.
const asynqQueues = "asynq:queues"

// newQueue returns an asynq queue name no other run uses: its keys are
// "asynq:{name}:…", so runs never see each other's tasks, also on a
// shared Redis.
func newQueue(scenario string) string {
	return "peers-" + scenario + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// cleanup deletes every key of asynq queue q and its entry in asynq's
// queue set. The server's own keys (asynq:servers, asynq:workers) are
// removed by its Shutdown.
func (t *target) cleanup(ctx context.Context, q string) error {
	if err := harness.DeleteKeys(ctx, t.admin, "asynq:{"+q+"}:*"); err != nil {
		return err
	}
	return t.admin.SRem(ctx, asynqQueues, q).Err()
}

// activeKey is asynq's list of queue q's tasks being processed: a task
// leaves it when its outcome is written.
func activeKey(q string) string { return "asynq:{" + q + "}:active" }
