package harness

// Redis helpers the scenarios share with bench/peers: opening a pool's
// connections before a run, reading the server's version, deleting a
// run's keys.

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// WarmPool makes c's pool open n connections, so that no timed run pays
// for a handshake: it holds n of them at once, each used once, then
// returns them to the pool.
func WarmPool(ctx context.Context, c *redis.Client, n int) error {
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

// RedisVersion is the redis_version of c's INFO server, or "unknown".
func RedisVersion(ctx context.Context, c redis.UniversalClient) string {
	info, err := c.Info(ctx, "server").Result()
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

// DeleteKeys deletes every key that matches pattern (a SCAN MATCH
// pattern), on every master of a cluster.
func DeleteKeys(ctx context.Context, c redis.UniversalClient, pattern string) error {
	return scanBatches(ctx, c, pattern, func(ctx context.Context, c *redis.Client, batch []string) error {
		// One UNLINK per key: in a cluster the keys of a batch lie in
		// different slots.
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.Unlink(ctx, k)
			}
			return nil
		})
		return err
	})
}

// scanBatches calls fn with the keys that match pattern, up to 1,000 at a
// time, on every master of a cluster, with that master's client.
func scanBatches(ctx context.Context, c redis.UniversalClient, pattern string, fn func(context.Context, *redis.Client, []string) error) error {
	return forEachNode(ctx, c, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				if err := fn(ctx, c, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		return fn(ctx, c, batch)
	})
}

// forEachNode calls fn with c itself on a single Redis, or with the client
// of each master of a cluster.
func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("harness: unexpected Redis client %T", c)
}
