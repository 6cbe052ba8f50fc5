package flow_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
)

var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, true) }

func realRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb := env.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startWorker runs a worker until the test ends.
func startWorker(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry, opts runtime.Options) *runtime.Worker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	w, err := runtime.NewWorker(rdb, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	return w
}

// waitState polls a job until it reaches state.
func waitState(t *testing.T, c *flow.Client, id, state string) *flow.JobInfo {
	t.Helper()
	var info *flow.JobInfo
	redistest.Eventually(t, "job "+id+" to be "+state, func() bool {
		var err error
		info, err = c.Job(context.Background(), id)
		return err == nil && info.State == state
	})
	return info
}
