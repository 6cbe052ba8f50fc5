package sticky_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sticky"
)

// TestCompletedPinnedLeavesNoDeadline: a job pinned to B with an
// After fallback, claimed and completed by B, leaves no entry in its
// partition's pin-deadline index (pinx) nor on a pin list. A helper's
// audit found the deadline stayed until it passed: pinx grew with the
// pinned jobs run, and kept every claim of the partition promoting.
func TestCompletedPinnedLeavesNoDeadline(t *testing.T) {
	rdb := shared.Server.Client()
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	f := newFleet(t)
	c, _ := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	ctx := context.Background()
	res, err := c.Enqueue(ctx, render{Pinned: true}, sticky.To("worker-b", sticky.After(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	start(t, rdb, f, ns, "worker-b", runtime.Options{})
	testkit.WaitState(t, c, f.sig, res.ID, flow.StateCompleted)
	keys, err := rdb.Keys(ctx, "*"+ns+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		typ, _ := rdb.Type(ctx, k).Result()
		switch typ {
		case "zset":
			if !strings.HasSuffix(k, ":pinx") {
				continue
			}
			zs, _ := rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
			for _, z := range zs {
				t.Errorf("completed pinned job %s: pinx %s still holds %v, due %s from now", res.ID, k, z.Member,
					time.Until(time.UnixMilli(int64(z.Score))).Round(time.Second))
			}
		case "list":
			if strings.Contains(k, ":pin:") || strings.HasSuffix(k, "worker-b") {
				n, _ := rdb.LLen(ctx, k).Result()
				t.Errorf("completed pinned job %s: pin list %s holds %d", res.ID, k, n)
			}
		}
	}
}
