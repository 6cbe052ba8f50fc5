package clustertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestLayoutAgreedOnCluster: on a cluster, a queue created with 4
// partitions by one process is used with 4 by a worker, a client and an
// operator configured with none: the client's jobs, spread over the
// partitions (and so over the nodes), are all run by the worker; pausing
// pauses all 4; the queue and its namespace are listed; a process
// configured with another count fails at start.
func TestLayoutAgreedOnCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := redistest.NewNamespace(t)
	rdb := clusterClient(t, env.Cluster)
	l := newLedger()
	reg := registry(t, l, nil)
	creator, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"wide": 4}})
	testkit.Must(t, err)
	_, err = creator.Enqueue(ctx, task{N: -1}, flow.WithQueue("wide"))
	testkit.Must(t, err)

	w := testkit.StartWorker(t, clusterClient(t, env.Cluster), reg, runtime.Options{Namespace: ns, Queues: map[string]int{"wide": 1}}, nil)
	c, err := flow.NewClient(clusterClient(t, env.Cluster), flow.ClientOptions{Namespace: ns})
	testkit.Must(t, err)
	var items []flow.Item
	for i := range 600 { // unkeyed: blocks of 128 over consecutive partitions
		items = append(items, flow.Item{Args: task{N: i}, Opts: []flow.EnqueueOption{flow.WithQueue("wide")}})
	}
	res, err := c.EnqueueMany(ctx, items...)
	testkit.Must(t, err)
	var ids []string
	used := map[string]bool{}
	for _, r := range res {
		ids = append(ids, r.ID)
		used[partitionOf(r.ID)] = true
	}
	if len(used) != 4 {
		t.Fatalf("an unconfigured client used partitions %v of a 4-partition queue", used)
	}
	waitCompleted(t, c, w.Sig, ids)

	ops := admin.New(c)
	testkit.Must(t, ops.PauseQueue(ctx, "wide"))
	qs, err := ops.Queues(ctx)
	testkit.Must(t, err)
	if len(qs) != 1 || qs[0].Name != "wide" || qs[0].Partitions != 4 || qs[0].Paused != 4 {
		t.Errorf("Queues = %+v, want wide with 4 partitions, all paused", qs)
	}
	for i := range 4 {
		if n := rdb.Exists(ctx, keys.Partition{NS: ns, Queue: "wide", Index: i}.Paused()).Val(); n != 1 {
			t.Errorf("partition %d is not paused", i)
		}
	}
	nss, err := admin.Namespaces(ctx, rdb)
	testkit.Must(t, err)
	if !slices.Contains(nss, ns) {
		t.Errorf("Namespaces = %v, want it to hold %s", nss, ns)
	}

	bad, err := runtime.NewWorker(rdb, reg, runtime.Options{Namespace: ns, Queues: map[string]int{"wide": 1},
		Partitions: map[string]int{"wide": 8}, Logger: testkit.Quiet})
	testkit.Must(t, err)
	if err := bad.Run(ctx); !errors.Is(err, runtime.ErrLayoutMismatch) || !strings.Contains(err.Error(), "8") {
		t.Errorf("a worker configured with 8: %v, want ErrLayoutMismatch", err)
	}
}
