package flow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
)

// What the spawn-across-resize tests share: their workers run in other
// goroutines (and some in another process's place), with no signal the
// tests hold, so they poll what Redis says (redistest.Within), for pollFor
// at most.
const pollFor = 15 * time.Second

// waitDepth waits until queue holds want jobs in state.
func waitDepth(t *testing.T, adm *admin.Client, queue, state string, want int64) {
	t.Helper()
	redistest.Within(t, pollFor, fmt.Sprintf("queue %s to hold %d %s", queue, want, state), func() (bool, string) {
		st, err := adm.QueueStats(context.Background(), queue, 0)
		if err != nil {
			return false, err.Error()
		}
		return st.Depth[state] == want, fmt.Sprint(st.Depth)
	})
}

// resizeOnceEmpty resizes the paused queue to n, trying again while the
// resize is refused: a partition it takes away still holds what its jobs
// sent on (their notifications to a parent, until relayed).
func resizeOnceEmpty(t *testing.T, adm *admin.Client, queue string, n int) {
	t.Helper()
	var other error
	redistest.Within(t, pollFor, fmt.Sprintf("the resize of %s to %d", queue, n), func() (bool, string) {
		err := adm.ResizeQueue(context.Background(), queue, n)
		if err != nil && !errors.Is(err, admin.ErrResizeRefused) {
			other = err
		}
		return err == nil || other != nil, fmt.Sprint(err)
	})
	if other != nil {
		t.Fatalf("resize of %s to %d: %v", queue, n, other)
	}
}

// waitRelayed waits until the outboxes of queue's n partitions are empty:
// what its jobs sent on (their notifications to a parent in another
// queue) was relayed, by a worker that serves the queue.
func waitRelayed(t *testing.T, rdb redis.UniversalClient, ns, queue string, n int) {
	t.Helper()
	redistest.Within(t, pollFor, fmt.Sprintf("the outboxes of %s relayed", queue), func() (bool, string) {
		var left []int64
		for i := range n {
			l, err := rdb.XLen(context.Background(), keys.Partition{NS: ns, Queue: queue, Index: i}.Outbox()).Result()
			if err != nil {
				return false, err.Error()
			}
			left = append(left, l)
		}
		return slices.Max(left) == 0, fmt.Sprint(left)
	})
}
