package clustertest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
)

// env has the shared masters-only cluster; the failover tests start their
// own clusters with replicas.
var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, true) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// task is the job every test runs.
type task struct{ N int }

func (task) Kind() string { return "task" }

// ledger records what handlers ran: runs per job ID, and the partition of
// each start in order.
type ledger struct {
	mu     sync.Mutex
	runs   map[string]int
	starts []string
}

func newLedger() *ledger { return &ledger{runs: map[string]int{}} }

func (l *ledger) record(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[id]++
	l.starts = append(l.starts, partitionOf(id))
}

// ran reports how many distinct jobs ran at least once.
func (l *ledger) ran() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

// partitionOf is the partition part of a job ID (queue:partition:local).
func partitionOf(id string) string {
	parts := strings.SplitN(id, ":", 3)
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// registry runs task jobs, recording them in l, then calling work with
// the job ID.
func registry(t *testing.T, l *ledger, work func(id string)) *flow.Registry {
	t.Helper()
	reg := flow.NewRegistry()
	err := flow.Register(reg, func(_ context.Context, j *flow.Job[task]) error {
		l.record(j.ID)
		if work != nil {
			work(j.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// startWorker runs a worker on rdb until the test ends.
func startWorker(t *testing.T, rdb redis.UniversalClient, reg *flow.Registry, opts runtime.Options) {
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
}

// clusterClient is a new ClusterClient on c, closed when the test ends.
func clusterClient(t *testing.T, c *redisproc.Cluster) *redis.ClusterClient {
	t.Helper()
	cc := c.Client()
	t.Cleanup(func() { cc.Close() })
	return cc
}

// waitCompleted waits until every job of ids is completed.
func waitCompleted(t *testing.T, c *flow.Client, ids []string) {
	t.Helper()
	for _, id := range ids {
		redistest.Eventually(t, "job "+id+" to complete", func() bool {
			info, err := c.Job(context.Background(), id)
			return err == nil && info.State == flow.StateCompleted
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
