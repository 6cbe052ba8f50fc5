package redistest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/internal/redisproc"
)

// Env is a test package's shared Redis: one server, and a 3-node cluster
// when asked for.
type Env struct {
	Server  *redisproc.Server
	Cluster *redisproc.Cluster
}

// Main is a test package's TestMain: it starts env (the cluster only when
// withCluster), runs the tests, stops env, fails the run if goroutines
// leaked, and exits.
func Main(m *testing.M, env *Env, withCluster bool) {
	var err error
	if env.Server, err = redisproc.StartServer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if withCluster {
		// a node that answers its peers' pings late is marked failed after
		// the node timeout, and with no replica to take its slots over the
		// cluster refuses every command (CLUSTERDOWN) until it is back:
		// on a starved machine (load 10 on 2 cores) 2 s was reached, and
		// tests of other subjects failed; no test of the shared cluster
		// waits for a failure to be detected (failover tests start their own)
		if env.Cluster, err = redisproc.StartCluster(3, redisproc.WithArgs("--cluster-node-timeout", "15000")); err != nil {
			env.Server.Close()
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	env.Server.Close()
	if env.Cluster != nil {
		env.Cluster.Close()
	}
	if code == 0 {
		// go-redis redials a dead node (a test killed it) from a goroutine
		// that sleeps a second between tries and exits at its next wake-up
		// once its pool is closed: not a leak.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Client is a new client of env's server, closed when the test ends.
func (env *Env) Client(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	rdb := env.Server.Client()
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}
