package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestOneNodeOfACluster: a redis:// URL naming one node of a Redis
// Cluster reaches the whole cluster: whether the server is a cluster is
// read from it, not assumed from the URL's scheme. Before, a command
// worked or failed with a bare MOVED by the node it was given and where
// its keys' slots lived (found by an audit).
func TestOneNodeOfACluster(t *testing.T) {
	t.Parallel()
	cl, err := redisproc.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	rdb := cl.Client()
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns, Partitions: map[string]int{"billing": 4}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := c.Enqueue(ctx, email{To: fmt.Sprint(i)}, flow.WithQueue("billing"), flow.WithPartitionKey(fmt.Sprint("k", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range cl.Addrs() {
		f := &fixture{t: t, ctx: ctx, ns: ns, url: "redis://" + addr}
		for _, args := range [][]string{{"queues", "list"}, {"queues", "stats", "billing"}, {"jobs", "list", "--queue", "billing", "--state", "available"}, {"workers"}} {
			out, errs, code := f.sluice(args...)
			if code != exitOK {
				t.Errorf("node %s: sluice %s: exit %d, %s", addr, strings.Join(args, " "), code, errs)
			}
			if args[0] == "jobs" && strings.Count(out, "billing:") != 8 {
				t.Errorf("node %s: jobs list shows %d jobs, want 8:\n%s", addr, strings.Count(out, "billing:"), out)
			}
		}
		f.url += "/2" // a cluster has database 0 only: the node says so
		if _, errs, code := f.sluice("queues", "list"); code == exitOK || !strings.Contains(errs, "SELECT is not allowed") {
			t.Errorf("node %s, database 2: exit %d, %q; want the node's refusal", addr, code, errs)
		}
	}
}
