package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/lua"
)

// TestEveryScriptLoadsAsFunction: every script's function library loads on
// a real server and on every master of a cluster (a library that reads a
// global or the call at load time is refused by FUNCTION LOAD), and
// loading it again, as a second process would, is no error.
func TestEveryScriptLoadsAsFunction(t *testing.T) {
	ctx := context.Background()
	single := env.Server.Client()
	cluster := env.Cluster.Client()
	t.Cleanup(func() { single.Close(); cluster.Close() })
	for name, sc := range lua.All() {
		for _, c := range []lua.Runner{single, cluster} {
			for range 2 {
				if err := sc.Load(ctx, c); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
		libs, err := single.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "s" + sc.Function()}).Result()
		testkit.Must(t, err)
		if len(libs) != 1 || len(libs[0].Functions) != 1 || libs[0].Functions[0].Name != sc.Function() {
			t.Errorf("%s: library %+v", name, libs)
		}
	}
}

// TestScriptsFallBackToEval: on a server without functions (miniredis) a
// script runs through EVALSHA, and answers as it does as a function.
func TestScriptsFallBackToEval(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	real := env.Server.Client()
	t.Cleanup(func() { mini.Close(); real.Close() })
	var replies []any
	for _, c := range []lua.Runner{mini, real} {
		keys := []string{"{fallback}:live", "{fallback}:w:w1"}
		got, err := lua.Heartbeat.Run(ctx, c, keys, "", "w1", 60000, "{fallback}:w:", "queues", "q").Result()
		if err != nil && err != redis.Nil {
			t.Fatalf("heartbeat on %T: %v", c, err)
		}
		replies = append(replies, got)
		if v, err := c.(redis.Cmdable).HGet(ctx, keys[1], "queues").Result(); err != nil || v != "q" {
			t.Errorf("worker hash after heartbeat: %q, %v", v, err)
		}
	}
	if replies[0] != replies[1] {
		t.Errorf("EVAL answered %v, the function %v", replies[0], replies[1])
	}
	if _, ok := mini.Do(ctx, "FCALL", lua.Heartbeat.Function(), 0).Result(); ok == nil {
		t.Fatal("miniredis runs FCALL now: the fallback is no longer tested here")
	}
}

// wrapped hides a client's concrete type, as an application's
// instrumentation wrapper would.
type wrapped struct{ redis.UniversalClient }

// TestScriptsRunThroughAWrappedCluster: a cluster client behind a wrapper
// (whose masters Load cannot reach) still runs every call after the
// libraries are flushed: where the library is missing, the call goes
// through EVAL.
func TestScriptsRunThroughAWrappedCluster(t *testing.T) {
	ctx := context.Background()
	cl := env.Cluster.Client()
	t.Cleanup(func() { cl.Close() })
	w := wrapped{cl}
	for i := range 20 {
		testkit.Must(t, cl.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FunctionFlush(ctx).Err() }))
		tag := fmt.Sprintf("{wrapped-%d}", i) // spread over the masters
		keys := []string{tag + ":live", tag + ":w:w1"}
		if err := lua.Heartbeat.Run(ctx, w, keys, "", "w1", 60000, tag+":w:", "queues", "q").Err(); err != nil && err != redis.Nil {
			t.Fatalf("heartbeat through a wrapped cluster client, %s: %v", tag, err)
		}
		if v, err := cl.HGet(ctx, keys[1], "queues").Result(); err != nil || v != "q" {
			t.Fatalf("%s: worker hash %q, %v", tag, v, err)
		}
	}
}
