package main

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// asCluster is rdb, or a cluster client in its place when rdb, a client
// of one server (a redis:// URL), reaches a node of a Redis Cluster:
// whether the server is one is read from it (INFO cluster), not assumed
// from the URL's scheme. A one-server client on a cluster node fails
// with MOVED on every key of another node's slots, so a command worked
// or not by the node it was given. The read is the connection check too.
// A server that refuses INFO (an ACL) is taken as it is named.
func asCluster(ctx context.Context, rdb redis.UniversalClient) (redis.UniversalClient, error) {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return rdb, rdb.Ping(ctx).Err()
	}
	info, err := c.Info(ctx, "cluster").Result()
	var reply redis.Error
	switch {
	case err != nil && errors.As(err, &reply):
		return rdb, c.Ping(ctx).Err()
	case err != nil:
		return rdb, err
	case !strings.Contains(info, "cluster_enabled:1"):
		return rdb, nil
	}
	o := c.Options() // its database is 0: a node refuses SELECT of another
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{o.Addr}, ClientName: o.ClientName, Dialer: o.Dialer, Protocol: o.Protocol,
		Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, TLSConfig: o.TLSConfig,
		MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, PoolTimeout: o.PoolTimeout, MinIdleConns: o.MinIdleConns, MaxIdleConns: o.MaxIdleConns,
	})
	if err := cc.Ping(ctx).Err(); err != nil {
		cc.Close()
		return rdb, err
	}
	c.Close()
	return cc, nil
}
