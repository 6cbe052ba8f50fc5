package clustertest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testsignal"
)

// env has the shared masters-only cluster; the failover tests start their
// own clusters with replicas.
var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, true) }

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

// clusterClient is a new ClusterClient on c, closed when the test ends.
func clusterClient(t *testing.T, c *redisproc.Cluster) *redis.ClusterClient {
	t.Helper()
	cc := c.Client()
	t.Cleanup(func() { cc.Close() })
	return cc
}

// waitCompleted waits until every job of ids is completed by a worker
// signalling to sig.
func waitCompleted(t *testing.T, c *flow.Client, sig *testsignal.Worker, ids []string) {
	t.Helper()
	for _, id := range ids {
		testkit.WaitState(t, c, sig, id, flow.StateCompleted)
	}
}
