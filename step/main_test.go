package step_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// shared is the package's redis-server and cluster.
var shared redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &shared, true) }

// env is one test's namespace, client and worker signals (testkit.Env).
type env struct {
	*testkit.Env
}

// backendClient is a new client of the shared redis-server ("redis") or
// the shared 3-node cluster ("cluster").
func backendClient(backend string) redis.UniversalClient {
	if backend == "cluster" {
		return shared.Cluster.Client()
	}
	return shared.Server.Client()
}

// noBackoff retries a failed job at once.
func noBackoff(int) time.Duration { return 0 }

// newEnv makes a namespace on rdb (closed when the test ends) with a
// worker running reg, retrying at once.
func newEnv(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry) *env {
	t.Helper()
	return newEnvWith(t, rdb, reg, runtime.Options{Backoff: noBackoff})
}

// newEnvWith is newEnv with the worker's options o.
func newEnvWith(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry, o runtime.Options) *env {
	t.Helper()
	t.Cleanup(func() { rdb.Close() })
	e := &env{testkit.NewEnv(t, rdb, flow.ClientOptions{Registry: reg})}
	e.StartWorker(reg, o)
	return e
}

// run enqueues args and waits until a worker has settled the job in
// state.
func (e *env) run(args flow.Args, state string) *flow.JobInfo {
	e.T.Helper()
	return e.WaitState(e.Enqueue(args), state)
}

// waitValue waits until key (a string) equals want, checking after each
// relay pass of the env's workers: the effects on keys outside a job's
// slot are relayed (one in its slot is applied with the commit, so it is
// there at once).
func (e *env) waitValue(key, want string) {
	e.T.Helper()
	testkit.Until(e.T, &e.Sig.Relayed, nil, key+" to be "+want, func() (bool, string) {
		got, err := e.RDB.Get(context.Background(), key).Result()
		return got == want, fmt.Sprintf("%q (%v)", got, err)
	})
}

func register[T flow.Args](t *testing.T, reg *flow.Registry, fn func(context.Context, *flow.Job[T]) error) {
	t.Helper()
	if err := flow.Register(reg, fn); err != nil {
		t.Fatal(err)
	}
}
