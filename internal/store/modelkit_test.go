package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// What the randomised model tests (TestModel, TestFlowModel, TestWaitModel,
// TestFamilyModel) share: their seeds and lengths from the environment,
// their choice of operation, the log of the last operations a failure
// shows, and (the last three) their Redis.

// envSeed is the seed environment variable name sets, else one from the
// time.
func envSeed(t *testing.T, name string) uint64 {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// envSteps is the positive count environment variable name sets, else def.
func envSteps(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// weightedOp is an operation a model test picks with weight w.
type weightedOp struct {
	name string
	w    int
	run  func()
}

// runWeighted runs one of ops, picked by rng by weight, and counts it.
func runWeighted(rng *rand.Rand, counts map[string]int, ops []weightedOp) {
	total := 0
	for _, o := range ops {
		total += o.w
	}
	x := rng.IntN(total)
	for _, o := range ops {
		if x < o.w {
			counts[o.name]++
			o.run()
			return
		}
		x -= o.w
	}
}

// keepLast appends line to log and keeps its last n lines: environment
// variable env's count when it sets one, else def.
func keepLast(log []string, line, env string, def int) []string {
	if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
		def = n
	}
	log = append(log, line)
	if len(log) > def {
		log = log[len(log)-def:]
	}
	return log
}

// modelRedis is the Redis of a model test run (TestFlowModel,
// TestWaitModel, TestFamilyModel): with lossy, the shared redis-server
// behind a chaos proxy that, seeded, loses the reply of 5% of the script
// calls and delivers 5% twice, reached by a client that sends a call
// again once (the scripts are loaded first, so that every call is one the
// proxy faults); else miniredis, with no faults. direct reaches the same
// data with no proxy between (px is nil for miniredis).
func modelRedis(t *testing.T, lossy bool, seed uint64, scripts ...*lua.Script) (name string, rdb, direct redis.UniversalClient, px *chaos.Proxy) {
	t.Helper()
	if !lossy {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr(), ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		t.Cleanup(func() { c.Close() })
		return "miniredis", c, c, nil
	}
	px, err := chaos.NewProxy(env.Server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: 1,
		MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 4 * time.Millisecond})
	for _, sc := range scripts {
		if err := sc.Load(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	d := env.Server.Client()
	t.Cleanup(func() {
		c.Close()
		d.Close()
		px.Close()
	})
	px.SetRandom(0.05, 0.05, seed, chaos.Commands(lua.Commands...))
	return "redis-lossy", c, d, px
}

// adminVerdict reads an operator call's answer against want, whether the
// model says the call must apply: whether it applied, whether its outcome
// is known (an error other than a refusal or not found: the call may have
// run), and what disagrees with the model ("" when nothing does).
func adminVerdict(err error, want bool) (applied, known bool, wrong string) {
	var se *sluicetype.StateError
	switch {
	case err == nil:
		if !want {
			wrong = "applied"
		}
		return true, true, wrong
	case errors.As(err, &se):
		if want {
			wrong = fmt.Sprintf("refused (%v)", err)
		}
		return false, true, wrong
	case errors.Is(err, store.ErrNotFound):
		return false, false, "not found"
	}
	return false, false, ""
}
