package main

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
)

// target is the Redis under test and the clients the benchmark uses on it.
//
// Producers and the worker get separate clients (separate connection pools,
// as they would have in separate processes), each counting its round trips.
// A third, uncounted client reads INFO and cleans up, so measuring does not
// disturb what is measured.
type target struct {
	addr     string // for the report
	external bool   // a Redis we did not start: share it politely
	producer *countedClient
	worker   *countedClient
	admin    *redis.Client
	server   *redistest.Server // nil for an external Redis
}

// connect uses the Redis at url, or when url is empty starts a private
// redis-server on a free port. producers is how many connections the
// producers' client opens up front.
func connect(ctx context.Context, url string, producers int) (*target, error) {
	var (
		opts *redis.Options
		t    = &target{}
	)
	if url != "" {
		o, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redis URL: %w", err)
		}
		opts, t.addr, t.external = o, o.Addr, true
	} else {
		srv, err := redistest.StartServer()
		if err != nil {
			return nil, fmt.Errorf("starting redis-server: %w", err)
		}
		opts = &redis.Options{Addr: srv.Addr()}
		t.addr, t.server = srv.Addr(), srv
		// redistest honours SLUICE_TEST_REDIS_ADDR: then the server is
		// someone else's.
		t.external = os.Getenv(redistest.EnvExternalAddr) != ""
	}
	// Each producer holds a connection while its call is in flight; give
	// every one of them its own, as separate processes would have.
	popts := *opts
	popts.PoolSize = max(producers, 10*goruntime.GOMAXPROCS(0))
	t.producer = newCountedClient(&popts)
	t.worker = newCountedClient(opts)
	t.admin = redis.NewClient(opts)
	// A new connection costs a handshake (HELLO, CLIENT SETINFO): open
	// them now, so that it is not counted in the first run. The worker
	// uses one connection per loop (fetch, ack, renew, maintenance), one
	// for pub/sub, and handlers that run steps or enqueue use the rest of
	// its pool (go-redis's default size, as a worker would have).
	err := t.admin.Ping(ctx).Err()
	if err == nil {
		err = warmPool(ctx, t.producer.Client, producers)
	}
	if err == nil {
		err = warmPool(ctx, t.worker.Client, t.worker.Options().PoolSize)
	}
	// Load the scripts, so that no run pays the one-off EVALSHA-then-EVAL
	// of a script's first use.
	for _, sc := range scripts {
		if err == nil {
			err = sc.Load(ctx, t.admin).Err()
		}
	}
	if err != nil {
		t.close()
		return nil, fmt.Errorf("redis at %s: %w", t.addr, err)
	}
	return t, nil
}

// warmPool makes c's pool open n connections: it holds n of them at once,
// each used once, then returns them to the pool.
func warmPool(ctx context.Context, c *redis.Client, n int) error {
	conns := make([]*redis.Conn, 0, n)
	defer func() {
		for _, cn := range conns {
			_ = cn.Close()
		}
	}()
	for range n {
		cn := c.Conn()
		conns = append(conns, cn)
		if err := cn.Ping(ctx).Err(); err != nil {
			return err
		}
	}
	return nil
}

// newNamespace returns a namespace no other run uses, so runs never see
// each other's jobs even on a shared Redis.
func newNamespace(parts ...string) string {
	ns := "bench"
	for _, p := range parts {
		ns += "-" + p
	}
	return ns + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// close closes the clients and stops the server we started, if any.
func (t *target) close() {
	for _, c := range []*redis.Client{t.producer.Client, t.worker.Client, t.admin} {
		_ = c.Close()
	}
	if t.server != nil {
		_ = t.server.Close()
	}
}

// cleanup deletes every key of namespace ns (queue "default", partition 0,
// the only partition the benchmark uses). On a private server it does
// nothing: the server and its data are thrown away at exit.
func (t *target) cleanup(ctx context.Context, ns string) error {
	if !t.external {
		return nil
	}
	pattern := keys.Partition{NS: ns, Queue: "default"}.Prefix() + "*"
	iter := t.admin.Scan(ctx, 0, pattern, 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := t.admin.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// serverVersion is the redis_version of INFO server, or "unknown".
func (t *target) serverVersion(ctx context.Context) string {
	info, err := t.admin.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}
