package store_test

import (
	"context"
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
