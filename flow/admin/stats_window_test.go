package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
)

// TestQueueStatsWindowBelowAMinute: QueueStats's window is "1m..2h" (its
// own error says so, and the CLI refuses --window 30s). A window under a
// minute was taken without a word and widened to a whole minute: a
// dashboard asking for the last 30 seconds got a minute's counts,
// labelled as what it asked for unless it read Window back; a window of
// 90 s was read as one minute likewise. Every window out of range, or
// not whole minutes, is ErrInvalid; 0 is the default (5m), and the
// bounds are taken.
func TestQueueStatsWindowBelowAMinute(t *testing.T) {
	t.Parallel()
	a := newAdmin(t, env.Client(t), nil)
	a.enqueue(email{To: "ann"})
	for _, w := range []time.Duration{30 * time.Second, time.Minute - time.Nanosecond, time.Nanosecond, -time.Second,
		admin.MaxStatsWindow + time.Nanosecond, 3 * time.Hour, 90 * time.Second, 5*time.Minute + time.Millisecond} {
		st, err := a.ops.QueueStats(a.ctx, "default", w)
		if !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("QueueStats with a %v window: Window %v, err %v; want ErrInvalid (\"not in 1m..2h\")", w, st.Window, err)
		}
	}
	for w, want := range map[time.Duration]time.Duration{0: 5 * time.Minute, time.Minute: time.Minute, admin.MaxStatsWindow: admin.MaxStatsWindow} {
		st, err := a.ops.QueueStats(a.ctx, "default", w)
		if err != nil || st.Window != want {
			t.Errorf("QueueStats with a %v window: Window %v, err %v; want %v", w, st.Window, err, want)
		}
	}
}
