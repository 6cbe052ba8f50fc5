package step_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
)

// shared is the package's redis-server and cluster.
var shared redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &shared, true) }

// env is one test's Redis, namespace, client and worker.
type env struct {
	t   *testing.T
	rdb redis.UniversalClient
	ns  string
	c   *flow.Client
}

func newEnv(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry) *env {
	t.Helper()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	w, err := runtime.NewWorker(rdb, reg, runtime.Options{
		Namespace: ns, Backoff: func(int) time.Duration { return 0 },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &env{t: t, rdb: rdb, ns: ns, c: c}
}

func (e *env) run(args flow.Args, state string) *flow.JobInfo {
	e.t.Helper()
	res, err := e.c.Enqueue(context.Background(), args)
	if err != nil {
		e.t.Fatal(err)
	}
	var info *flow.JobInfo
	redistest.Eventually(e.t, "job "+res.ID+" to be "+state, func() bool {
		info, err = e.c.Job(context.Background(), res.ID)
		return err == nil && info.State == state
	})
	return info
}

func register[T flow.Args](t *testing.T, reg *flow.Registry, fn func(context.Context, *flow.Job[T]) error) {
	t.Helper()
	if err := flow.Register(reg, fn); err != nil {
		t.Fatal(err)
	}
}
