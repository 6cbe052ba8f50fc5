package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
)

// TestHuntQueueStatsWindowBelowAMinute: QueueStats's window is "1m..2h"
// (its own error says so, and the CLI refuses --window 30s), but a window
// under a minute was taken without a word and widened to a whole minute:
// a dashboard asking for the last 30 seconds got a minute's counts,
// labelled as what it asked for unless it reads Window back.
func TestHuntQueueStatsWindowBelowAMinute(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "ann"})
	st, err := a.ops.QueueStats(a.ctx, "default", 30*time.Second)
	if !errors.Is(err, flow.ErrInvalid) {
		t.Fatalf("QueueStats with a 30s window: Window %v, err %v; want ErrInvalid (\"not in 1m..2h\"), as -1s and 3h get", st.Window, err)
	}
}
