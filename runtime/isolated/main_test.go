//go:build unix

package isolated_test

// Integration tests of isolated execution against a real redis-server
// (started once in TestMain, shared; every test has its own namespace).
// The child processes are this test binary, re-executed with a first
// argument that TestMain recognises (childArg: serve one attempt with
// childRegistry). Synchronisation never sleeps: tests wait on the
// worker's test signals (testkit), on Redis lists the children push to
// (BLPOP), or poll /proc state, which no signal reports.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/isolated"
)

// shared is the package's redis-server.
var shared redistest.Env

// waitTimeout bounds every wait of a test: generous, for -race on 2 cores.
const waitTimeout = testkit.Timeout

// The first argument of a re-executed test binary: what to be.
const (
	childArg   = "sluice-isolated-test-child"   // an isolated child: isolated.Main
	sleeperArg = "sluice-isolated-test-sleeper" // a grandchild that sleeps
	garbageArg = "sluice-isolated-test-garbage" // a child that prints text, not frames
	workerArg  = "sluice-isolated-test-worker"  // a worker process (namespace: the next argument; then its lease, if not the default)
	leakArg    = "sluice-isolated-test-leak"    // a child that leaves its stdout to a grandchild and exits (next argument: "group" or "setsid")
	lingerArg  = "sluice-isolated-test-linger"  // a child that replies, then takes its time to exit (linger_test.go)
	bgArg      = "sluice-isolated-test-bg"      // a Main child whose handler starts a grandchild and returns (orphan_linux_test.go)
	bgOwnArg   = "sluice-isolated-test-bg-own"  // the same handler under a main of its own: Serve, then Exit
)

// envRedis tells a child where the tests' Redis is (its environment is
// otherwise empty).
const envRedis = "SLUICE_ISOLATED_TEST_REDIS"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case childArg:
			isolated.Main(childRegistry())
		case sleeperArg:
			time.Sleep(time.Hour)
			os.Exit(0)
		case garbageArg:
			fmt.Println("hello, I am not a protocol frame")
			os.Exit(0)
		case workerArg:
			os.Exit(workerMain(os.Args[2:]))
		case leakArg:
			os.Exit(leakMain(os.Args[2] == "setsid"))
		case lingerArg:
			os.Exit(lingerMain())
		case bgArg:
			isolated.Main(bgRegistry())
		case bgOwnArg:
			err := isolated.Serve(bgRegistry())
			fmt.Fprintln(os.Stderr, "served:", err) // a main's own work after the attempt
			isolated.Exit(err)
		}
	}
	redistest.Main(m, &shared, false)
}

// workerMain is a worker process on namespace args[0] running hangArgs
// jobs in isolated children, until it is killed; args[1], when given, is
// its lease (time.ParseDuration).
func workerMain(args []string) int {
	ns := args[0]
	var lease time.Duration
	if len(args) > 1 {
		var err error
		if lease, err = time.ParseDuration(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	hd, err := isolated.Handler(command(), isolated.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(envRedis)})
	w, err := runtime.NewWorker(rdb, isolated.Handlers{Kinds: map[string]runtime.Handler{hangArgs{}.Kind(): hd}},
		runtime.Options{Namespace: ns, Lease: lease, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "worker: Run returned", w.Run(context.Background()))
	return 2
}

// env is one test's namespace with a Redis client, a flow client and
// the signals of the workers it starts (testkit.Env).
type env struct {
	*testkit.Env
}

func newEnv(t *testing.T, clk runtime.Clock) *env {
	t.Helper()
	return &env{testkit.NewEnv(t, shared.Client(t), flow.ClientOptions{Clock: clk})}
}

// command is the test binary as an isolated child, told where Redis is.
func command(extraEnv ...string) isolated.Command {
	addr := os.Getenv(envRedis) // in a worker process
	if shared.Server != nil {
		addr = shared.Server.Addr()
	}
	// A -race binary otherwise lingers a second at exit.
	env := []string{envRedis + "=" + addr, "GORACE=atexit_sleep_ms=0"}
	return isolated.Command{Path: os.Args[0], Args: []string{childArg}, Env: append(env, extraEnv...)}
}

// baseName is the children's program name, as error messages give it.
func baseName() string { return filepath.Base(os.Args[0]) }

// isolate makes the handler of each kind an isolated child with opts.
func isolate(t *testing.T, cmd isolated.Command, opts isolated.Options, kinds ...string) isolated.Handlers {
	t.Helper()
	h := isolated.Handlers{Kinds: map[string]runtime.Handler{}}
	for _, k := range kinds {
		hd, err := isolated.Handler(cmd, opts)
		if err != nil {
			t.Fatal(err)
		}
		h.Kinds[k] = hd
	}
	return h
}

// startWorker runs a worker on e's namespace until the test ends; it
// returns a function that stops it (once) and returns what Run returned.
func (e *env) startWorker(h runtime.Handlers, o runtime.Options) (stop func() error) {
	e.T.Helper()
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return time.Hour }
	}
	return e.StartWorker(h, o).Stop
}

// key is a Redis key of this test's namespace.
func (e *env) key(name string) string { return e.NS + ":test:" + name }

// pop waits for a child to push to list key and returns what it pushed.
func (e *env) pop(key string) string {
	e.T.Helper()
	v, err := e.RDB.BLPop(context.Background(), waitTimeout, key).Result()
	if err != nil {
		e.T.Fatalf("waiting for a child to push to %s: %v", key, err)
	}
	return v[1]
}
