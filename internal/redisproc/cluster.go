package redisproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

const clusterReadyTimeout = 20 * time.Second

// Cluster is a Redis Cluster of redis-server processes started by
// StartCluster: masters, and replicas when asked for (WithReplicas).
type Cluster struct {
	nodes   []*Server // masters first, then replicas, in start order
	masters int
}

// WithReplicas gives every master of StartCluster r replicas (CLUSTER
// REPLICATE), which take over its slots when it fails (see Failover and
// KillMaster). It has no effect on StartServer.
func WithReplicas(r int) Option {
	return func(c *config) { c.replicas = r }
}

// StartCluster starts n cluster-enabled redis-server masters, and
// WithReplicas(r) replicas of each, every node in its own directory; gives
// each master an even share of the 16384 slots, joins all nodes with
// CLUSTER MEET, attaches the replicas, and waits until every node reports
// cluster_state:ok, every replica's link to its master is up and a
// ClusterClient can SET/GET keys on every master. It does not need
// redis-cli. Nodes detect a failed peer after --cluster-node-timeout,
// 2000 ms unless WithArgs overrides it.
//
// Each node's cluster bus uses its own free port (--cluster-port), so
// high data ports cannot push the bus port out of range.
func StartCluster(n int, opts ...Option) (*Cluster, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if n < 1 || cfg.replicas < 0 {
		return nil, fmt.Errorf("redistest: StartCluster(%d) with %d replicas: need at least one master", n, cfg.replicas)
	}
	if _, err := findRedisServer(); err != nil {
		return nil, err
	}
	c := &Cluster{masters: n}
	nodeOpts := append([]Option{
		WithArgs(
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000",
			"--cluster-announce-ip", "127.0.0.1",
		),
		func(cfg *config) {
			cfg.bindPorts = func() ([]string, error) {
				p, err := freePort()
				if err != nil {
					return nil, err
				}
				return []string{"--cluster-port", strconv.Itoa(p)}, nil
			}
		},
	}, opts...)
	for range n * (1 + cfg.replicas) {
		// Not StartServer: SLUICE_TEST_REDIS_ADDR names a single non-cluster
		// server and does not apply here.
		s, err := startServer(nodeOpts...)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	if err := c.setup(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()

	clients := make([]*redis.Client, len(c.nodes))
	for i, s := range c.nodes {
		clients[i] = s.Client()
	}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()

	n := c.masters
	for i, cl := range clients[:n] {
		lo, hi := i*keys.Slots/n, (i+1)*keys.Slots/n-1
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: node %s: CLUSTER ADDSLOTSRANGE %d %d: %w", c.nodes[i].Addr(), lo, hi, err)
		}
	}
	for i := 1; i < len(c.nodes); i++ {
		s := c.nodes[i]
		// CLUSTER MEET ip port cluster-bus-port (the bus port is not port+10000).
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), s.busPort()).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET %s from %s: %w", s.Addr(), c.nodes[0].Addr(), err)
		}
	}

	var lastErr error
	for {
		if lastErr = c.replicate(ctx, clients); lastErr == nil {
			lastErr = c.ready(ctx, clients)
		}
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster %v not ready within %s: %w", c.Addrs(), clusterReadyTimeout, lastErr)
		case <-time.After(pollInterval * 5):
		}
	}
}

// replicate makes replica j of the replicas (nodes after the masters)
// replicate master j mod masters, once it knows that master; nodes already
// replicating are left alone, so it can be retried until it succeeds.
func (c *Cluster) replicate(ctx context.Context, clients []*redis.Client) error {
	for j, cl := range clients[c.masters:] {
		master := clients[j%c.masters]
		info, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("node %s: INFO replication: %w", c.nodes[c.masters+j].Addr(), err)
		}
		if parseInfo(info)["role"] == "slave" {
			continue
		}
		id, err := master.ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("node %s: CLUSTER MYID: %w", c.nodes[j%c.masters].Addr(), err)
		}
		// Fails until gossip has told the replica about the master.
		if err := cl.ClusterReplicate(ctx, id).Err(); err != nil {
			return fmt.Errorf("node %s: CLUSTER REPLICATE %s: %w", c.nodes[c.masters+j].Addr(), id, err)
		}
	}
	return nil
}

// ready reports nil once every node sees a healthy cluster of all nodes,
// every replica's link to its master is up, and a fresh ClusterClient can
// write to and read from every master.
func (c *Cluster) ready(ctx context.Context, clients []*redis.Client) error {
	for i, cl := range clients {
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("node %s: CLUSTER INFO: %w", c.nodes[i].Addr(), err)
		}
		fields := parseInfo(info)
		if fields["cluster_state"] != "ok" || fields["cluster_known_nodes"] != strconv.Itoa(len(c.nodes)) {
			return fmt.Errorf("node %s: cluster_state:%s cluster_known_nodes:%s", c.nodes[i].Addr(),
				fields["cluster_state"], fields["cluster_known_nodes"])
		}
	}
	for i, cl := range clients[c.masters:] {
		info, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("node %s: INFO replication: %w", c.nodes[c.masters+i].Addr(), err)
		}
		if link := parseInfo(info)["master_link_status"]; link != "up" {
			return fmt.Errorf("node %s: master_link_status:%s", c.nodes[c.masters+i].Addr(), link)
		}
	}

	cc := c.Client()
	defer cc.Close()
	// One key per master: find a hash tag owned by each master's slot range.
	n := c.masters
	for i := range n {
		key := fmt.Sprintf("{%s}redistest:ready", tagForNode(i, n))
		if err := cc.Set(ctx, key, "1", time.Minute).Err(); err != nil {
			return fmt.Errorf("cluster SET %s: %w", key, err)
		}
		if v, err := cc.Get(ctx, key).Result(); err != nil || v != "1" {
			return fmt.Errorf("cluster GET %s = %q, %v", key, v, err)
		}
		if err := cc.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("cluster DEL %s: %w", key, err)
		}
	}
	return nil
}

// tagForNode returns a short hash tag whose slot falls into node i's range
// when keys.Slots are split evenly over n nodes.
func tagForNode(i, n int) string {
	lo, hi := i*keys.Slots/n, (i+1)*keys.Slots/n-1
	for j := 0; ; j++ {
		tag := "n" + strconv.Itoa(j)
		if s := keys.Slot(tag); s >= lo && s <= hi {
			return tag
		}
	}
}

func parseInfo(info string) map[string]string {
	m := make(map[string]string)
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// Addrs returns the nodes' addresses ("127.0.0.1:port"), in start order:
// the masters first, then the replicas (roles change on failover).
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Nodes returns the node servers, in Addrs order (e.g. to Restart one).
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// Client returns a new go-redis ClusterClient seeded with all node
// addresses. The caller owns it and must Close it.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
}

// Close stops every node and removes their directories. Safe to call more
// than once.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.nodes {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
