package flow_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/testkit"
)

// What the spawn-across-resize tests share: their workers run in other
// goroutines (and some in another process's place), with no signal the
// tests hold, so they poll what Redis says, every pollEvery, for
// pollFor at most.
const (
	pollEvery = 20 * time.Millisecond
	pollFor   = 15 * time.Second
)

// waitDepth waits until queue holds want jobs in state.
func waitDepth(t *testing.T, adm *admin.Client, queue, state string, want int64) {
	t.Helper()
	deadline := time.Now().Add(pollFor)
	for {
		st, err := adm.QueueStats(context.Background(), queue, 0)
		testkit.Must(t, err)
		if st.Depth[state] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: %v, want %s %d", queue, st.Depth, state, want)
		}
		time.Sleep(pollEvery)
	}
}

// resizeOnceEmpty resizes the paused queue to n, trying again while the
// resize is refused: a partition it takes away still holds what its jobs
// sent on (their notifications to a parent, until relayed).
func resizeOnceEmpty(t *testing.T, adm *admin.Client, queue string, n int) {
	t.Helper()
	deadline := time.Now().Add(pollFor)
	for {
		err := adm.ResizeQueue(context.Background(), queue, n)
		if err == nil {
			return
		}
		if !errors.Is(err, admin.ErrResizeRefused) || time.Now().After(deadline) {
			t.Fatalf("resize of %s to %d: %v", queue, n, err)
		}
		time.Sleep(pollEvery)
	}
}
