package clustertest

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
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
	w := testkit.StartWorker(t, clusterClient(t, env.Cluster), reg, runtime.Options{Namespace: ns, Partitions: parts}, nil)
	// Run subscribes, and has every subscription confirmed, before it
	// claims: once it is idle, every node has it.
	w.Sig.Idle.Wait(t)
	channel := keys.WakeChannel(ns, "default")
	for _, node := range env.Cluster.Nodes() {
		rdb := node.Client()
		n, err := rdb.PubSubNumSub(ctx, channel).Result()
		rdb.Close()
		if err != nil || n[channel] != 1 {
			t.Errorf("%d subscriptions to %s on %s (%v), want the worker's", n[channel], channel, node.Addr(), err)
		}
	}
	c, err := flow.NewClient(clusterClient(t, env.Cluster), flow.ClientOptions{Namespace: ns, Registry: reg, Partitions: parts})
	testkit.Must(t, err)
	var ids []string
	for i := range 12 {
		res, err := c.Enqueue(ctx, task{N: i})
		testkit.Must(t, err)
		ids = append(ids, res.ID)
	}
	waitCompleted(t, c, w.Sig, ids)
}
