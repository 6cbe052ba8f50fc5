package clustertest

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/runtime"
)

// TestWakeupsHeardOnEveryNode: a worker on a cluster subscribes to its
// wake channel on every node, so that a wake-up reaches it from the node
// whose script published it, without the cluster bus's relay delay; and
// jobs on partitions spread over all the nodes start.
func TestWakeupsHeardOnEveryNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := redistest.NewNamespace(t)
	parts := map[string]int{"default": 6}
	l := newLedger()
	reg := registry(t, l, nil)
	startWorker(t, clusterClient(t, env.Cluster), reg, runtime.Options{Namespace: ns, Partitions: parts})
	channel := keys.WakeChannel(ns, "default")
	for _, node := range env.Cluster.Nodes() {
		rdb := node.Client()
		redistest.Eventually(t, "a subscription on "+node.Addr(), func() bool {
			n, err := rdb.PubSubNumSub(ctx, channel).Result()
			return err == nil && n[channel] == 1
		})
		rdb.Close()
	}
	c, err := flow.NewClient(clusterClient(t, env.Cluster), flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	must(t, err)
	var ids []string
	for i := range 12 {
		res, err := c.Enqueue(ctx, task{N: i})
		must(t, err)
		ids = append(ids, res.ID)
	}
	waitCompleted(t, c, ids)
}
