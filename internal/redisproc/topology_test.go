package redisproc

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/keys"
)

// TestClusterTopology: a cluster of 3 masters with a replica each keeps a
// key's value through a coordinated failover, a slot migration and a
// SIGKILLed master (the write waited for its replica), and the helpers
// report the new owner each time.
func TestClusterTopology(t *testing.T) {
	t.Parallel()
	c, err := StartCluster(3, WithReplicas(1), WithArgs("--cluster-node-timeout", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if len(c.Nodes()) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := c.Client()
	defer cc.Close()
	key := "{" + testKeys(t) + "}k"
	slot := keys.Slot(key)
	if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	check := func(stage string, want *Server) {
		t.Helper()
		got, err := c.MasterOf(ctx, slot)
		if err != nil || got != want {
			t.Fatalf("%s: master of slot %d = %v, %v; want %s", stage, slot, got, err, want.Addr())
		}
		fresh := c.Client() // cc may still know the old master's address
		defer fresh.Close()
		if v, err := fresh.Get(ctx, key).Result(); err != nil || v != "v" {
			t.Fatalf("%s: GET = %q, %v", stage, v, err)
		}
	}
	first, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := c.ReplicasOf(ctx, first)
	if err != nil || len(reps) != 1 {
		t.Fatalf("replicas of %s: %v, %v", first.Addr(), reps, err)
	}

	promoted, err := c.Failover(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if promoted != reps[0] {
		t.Fatalf("failover promoted %s, want %s", promoted.Addr(), reps[0].Addr())
	}
	check("after failover", promoted)

	var other *Server
	for _, s := range c.Nodes()[:3] {
		if s != first && s != promoted {
			other = s
			break
		}
	}
	if err := c.MigrateSlot(ctx, slot, other, 10, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	check("after migration", other)

	if err := c.AwaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	killed, promoted, err := c.KillMaster(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if killed != other {
		t.Fatalf("killed %s, want %s", killed.Addr(), other.Addr())
	}
	check("after SIGKILL", promoted)
}
