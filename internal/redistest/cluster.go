package redistest

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

// Cluster is a Redis Cluster of master-only redis-server processes started
// by StartCluster.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts n cluster-enabled redis-servers (masters, no replicas),
// each in its own directory, gives each an even share of the 16384 slots,
// joins them with CLUSTER MEET and waits until every node reports
// cluster_state:ok and a ClusterClient can SET/GET keys on every node.
// It does not need redis-cli.
//
// Each node's cluster bus uses its own free port (--cluster-port), so
// high data ports cannot push the bus port out of range.
func StartCluster(n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redistest: StartCluster(%d): need at least one node", n)
	}
	if _, err := findRedisServer(); err != nil {
		return nil, err
	}
	c := &Cluster{}
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
	for range n {
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

	n := len(c.nodes)
	for i, cl := range clients {
		lo, hi := i*keys.Slots/n, (i+1)*keys.Slots/n-1
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: node %s: CLUSTER ADDSLOTSRANGE %d %d: %w", c.nodes[i].Addr(), lo, hi, err)
		}
	}
	for i := 1; i < n; i++ {
		s := c.nodes[i]
		// CLUSTER MEET ip port cluster-bus-port (the bus port is not port+10000).
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), s.busPort()).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET %s from %s: %w", s.Addr(), c.nodes[0].Addr(), err)
		}
	}

	var lastErr error
	for {
		if lastErr = c.ready(ctx, clients); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster %v not ready within %s: %w", c.Addrs(), clusterReadyTimeout, lastErr)
		case <-time.After(pollInterval * 5):
		}
	}
}

// ready reports nil once every node sees a healthy cluster of all nodes and
// a fresh ClusterClient can write to and read from every master.
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

	cc := c.Client()
	defer cc.Close()
	// One key per node: find a hash tag owned by each node's slot range.
	n := len(c.nodes)
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

// Addrs returns the nodes' addresses ("127.0.0.1:port"), in start order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Nodes returns the node servers, in start order (e.g. to Restart one).
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
