package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestWorkerRunsWhenRetentionCannotBeRecorded: a worker that cannot write
// its retention record (here the key holds a string: HSET answers
// WRONGTYPE; an ACL user without the key is refused the same way) logs a
// warning naming its queues and runs its jobs: the record only tells
// operators' tools, which then fall back to the default and say so.
func TestWorkerRunsWhenRetentionCannotBeRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	testkit.Must(t, e.RDB.Set(context.Background(), keys.Retention(e.NS), "not a hash", 0).Err())
	id := e.Enqueue(workArgs{})
	w := e.startWorker(quickHandler(t), runtime.Options{})
	e.WaitState(id, flow.StateCompleted)
	if w.logs.find(func(l logRec) bool {
		return l.Level == slog.LevelWarn && strings.Contains(l.Msg, "recording the worker's retention")
	}) == nil {
		w.logs.dump(t)
		t.Error("no warning says the worker's retention was not recorded")
	}
}
