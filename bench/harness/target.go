package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/runtime"
)

// Topologies the benchmark can run against.
const (
	// TopologySingle is a private redis-server the benchmark starts.
	TopologySingle = "single"
	// TopologyCluster is a private 3-node Redis Cluster the benchmark
	// starts.
	TopologyCluster = "cluster"
	// TopologyURL is the Redis or Redis Cluster given by -redis.
	TopologyURL = "url"
)

// clusterNodes is the size of the private cluster.
const clusterNodes = 3

// target is the Redis under test and the clients the benchmark uses on it.
//
// Producers and the worker get separate clients (separate connection pools,
// as they would have in separate processes), each counting its round trips.
// A third, uncounted client reads INFO and cleans up, so measuring does not
// disturb what is measured.
type target struct {
	topology   string
	url        string // how a worker child process connects
	addr       string // for the report
	external   bool   // a Redis we did not start: share it politely
	cluster    bool   // a Redis Cluster: INFO is summed over its masters
	partitions int    // partitions of the queue "default"
	producer   *countedClient
	worker     *countedClient
	admin      redis.UniversalClient
	stderr     io.Writer
	closers    []func() error // servers we started
}

// connect opens the Redis of topology: a private redis-server or 3-node
// cluster, or the one at url (TopologyURL). producers is how many
// connections the producers' client opens up front; partitions, when not
// zero, overrides the default of 1 on a single Redis and 2 per node on a
// cluster.
func connect(ctx context.Context, topology, url string, producers, partitions int, stderr io.Writer) (*target, error) {
	t := &target{topology: topology, stderr: stderr}
	var err error
	switch topology {
	case TopologyURL:
		t.url, t.external = url, true
	case TopologySingle:
		srv, err := redisproc.StartServer()
		if err != nil {
			return nil, fmt.Errorf("starting redis-server: %w", err)
		}
		t.closers = append(t.closers, srv.Close)
		t.url = "redis://" + srv.Addr()
		// redistest honours SLUICE_TEST_REDIS_ADDR: then the server is
		// someone else's.
		t.external = os.Getenv(redisproc.EnvExternalAddr) != ""
	case TopologyCluster:
		c, err := redisproc.StartCluster(clusterNodes)
		if err != nil {
			return nil, fmt.Errorf("starting a %d-node cluster: %w", clusterNodes, err)
		}
		t.closers = append(t.closers, c.Close)
		t.url = "redis+cluster://" + strings.Join(c.Addrs(), ",")
	default:
		return nil, fmt.Errorf("unknown topology %q", topology)
	}
	base, err := flow.Connect(t.url)
	if err != nil {
		t.close()
		return nil, fmt.Errorf("-redis: %w", err)
	}
	defer base.Close()
	switch b := base.(type) {
	case *redis.ClusterClient:
		t.cluster, t.addr = true, strings.Join(b.Options().Addrs, ",")
	case *redis.Client:
		t.addr = b.Options().Addr
	}
	t.partitions = partitions
	if t.partitions <= 0 {
		t.partitions = 1
		if t.cluster {
			t.partitions = 2 * clusterNodes
		}
	}
	// Each producer holds a connection while its call is in flight; give
	// every one of them its own, as separate processes would have.
	t.producer = newCountedClient(base, t.url, max(producers, 10*goruntime.GOMAXPROCS(0)))
	t.worker = newCountedClient(base, t.url, 0)
	t.admin = newClient(base, t.url, 0)
	if err := t.warm(ctx, producers); err != nil {
		t.close()
		return nil, fmt.Errorf("redis at %s: %w", t.addr, err)
	}
	return t, nil
}

// newClient returns a new client with the options of base (made from url)
// and, if poolSize is not zero, that pool size.
func newClient(base redis.UniversalClient, url string, poolSize int) redis.UniversalClient {
	switch b := base.(type) {
	case *redis.ClusterClient:
		o := *b.Options()
		if poolSize > 0 {
			o.PoolSize = poolSize
		}
		// The copy would share the original's maintenance-notification
		// handlers, and its node clients fail to register their own.
		o.MaintNotificationsConfig = nil
		return redis.NewClusterClient(&o)
	case *redis.Client:
		// Parsed again, not copied: a copy of a client's options shares
		// its push-notification handlers (see the cluster case).
		o, err := redis.ParseURL(url)
		if err != nil {
			panic(fmt.Sprintf("harness: %s parsed before but not now: %v", url, err))
		}
		if poolSize > 0 {
			o.PoolSize = poolSize
		}
		return redis.NewClient(o)
	}
	panic(fmt.Sprintf("harness: unexpected Redis client %T", base))
}

// warm opens the connections of the producers' and the worker's pools, so
// that no handshake (HELLO, CLIENT SETINFO) is counted in the first run,
// and loads the scripts, so that no run pays the one-off EVALSHA-then-EVAL
// of a script's first use. The worker uses one connection per loop (fetch,
// ack, renew, maintenance), one for pub/sub, and handlers that run steps or
// enqueue use the rest of its pool (go-redis's default size, as a worker
// would have).
func (t *target) warm(ctx context.Context, producers int) error {
	if err := t.admin.Ping(ctx).Err(); err != nil {
		return err
	}
	if err := forEachNode(ctx, t.producer.UniversalClient, func(ctx context.Context, c *redis.Client) error {
		return WarmPool(ctx, c, producers)
	}); err != nil {
		return err
	}
	if err := forEachNode(ctx, t.worker.UniversalClient, func(ctx context.Context, c *redis.Client) error {
		return WarmPool(ctx, c, c.Options().PoolSize)
	}); err != nil {
		return err
	}
	for _, sc := range scripts {
		if err := sc.Load(ctx, t.admin); err != nil {
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

// clientOptions are the options of a producer's client on namespace ns.
func (t *target) clientOptions(ns string, reg *flow.Registry) flow.ClientOptions {
	return flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: map[string]int{"default": t.partitions}}
}

// workerOptions are the options of a worker on namespace ns.
func (t *target) workerOptions(ns string, concurrency int, discard bool) runtime.Options {
	return runtime.Options{
		Namespace: ns, Concurrency: concurrency, DiscardCompleted: discard,
		Partitions: map[string]int{"default": t.partitions},
	}
}

// progress tells the person waiting what is running (on stderr, so it
// never mixes with the table or JSON on stdout).
func (t *target) progress(format string, args ...any) {
	fmt.Fprintf(t.stderr, "· [%s] "+format+"\n", append([]any{t.topology}, args...)...)
}

// close closes the clients and stops the servers we started, if any.
func (t *target) close() {
	for _, c := range []*countedClient{t.producer, t.worker} {
		if c != nil {
			_ = c.Close()
		}
	}
	if t.admin != nil {
		_ = t.admin.Close()
	}
	for _, c := range t.closers {
		_ = c()
	}
}

// cleanup deletes every key of namespace ns. On a private server it does
// nothing: the server and its data are thrown away at exit.
func (t *target) cleanup(ctx context.Context, ns string) error {
	if !t.external {
		return nil
	}
	return t.deleteNamespace(ctx, ns)
}

// deleteNamespace deletes every key of namespace ns: all share the prefix
// "{ns:" (the queues' partitions and layouts, the worker registry); and
// takes ns out of the set of namespaces.
func (t *target) deleteNamespace(ctx context.Context, ns string) error {
	if err := DeleteKeys(ctx, t.admin, "{"+ns+":*"); err != nil {
		return err
	}
	return t.admin.SRem(ctx, keys.Namespaces, ns).Err()
}
