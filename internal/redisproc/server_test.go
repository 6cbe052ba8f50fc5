package redisproc

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustStart(t *testing.T, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestServerPingSetGet(t *testing.T) {
	t.Parallel()
	s := mustStart(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || s.Port() <= 0 {
		t.Fatalf("Addr=%q Port=%d", s.Addr(), s.Port())
	}
	ctx := ctxT(t)
	rdb := s.Client()
	defer rdb.Close()

	if got, err := rdb.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	ns := testKeys(t)
	if err := rdb.Set(ctx, ns+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, ns+":k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
	// Persistence is off by default.
	if got, err := rdb.ConfigGet(ctx, "appendonly").Result(); err != nil || got["appendonly"] != "no" {
		t.Fatalf("appendonly = %v, %v", got, err)
	}
	if got, err := rdb.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
		t.Fatalf("save = %v, %v", got, err)
	}
}

func TestServerRestartKeepsAOFData(t *testing.T) {
	t.Parallel()
	s := mustStart(t, WithAppendOnly())
	ctx := ctxT(t)
	rdb := s.Client()
	defer rdb.Close()

	if got, err := rdb.ConfigGet(ctx, "appendfsync").Result(); err != nil || got["appendfsync"] != "always" {
		t.Fatalf("appendfsync = %v, %v", got, err)
	}
	ns := testKeys(t)
	if err := rdb.Set(ctx, ns+":survivor", "still here", 0).Err(); err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Port() != port {
		t.Fatalf("port changed on restart: %d -> %d", port, s.Port())
	}
	// A fresh client, and the old one (which must reconnect).
	rdb2 := s.Client()
	defer rdb2.Close()
	for _, c := range []*redis.Client{rdb2, rdb} {
		if got, err := c.Get(ctx, ns+":survivor").Result(); err != nil || got != "still here" {
			t.Fatalf("GET after restart = %q, %v", got, err)
		}
	}
	if err := rdb2.Set(ctx, ns+":after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseIsIdempotentAndStopsServer(t *testing.T) {
	t.Parallel()
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := ping(s.Addr()); err == nil {
		t.Fatal("server still answers after Close")
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Close succeeded")
	}
}

func TestNoRedis(t *testing.T) {
	t.Setenv(EnvExternalAddr, "")
	t.Setenv(EnvRedisServer, "/nonexistent/redis-server")
	_, err := StartServer()
	if !errors.Is(err, ErrNoRedis) {
		t.Fatalf("err = %v, want ErrNoRedis", err)
	}
	t.Setenv(EnvRedisServer, "")
	t.Setenv("PATH", t.TempDir())
	_, err = StartServer()
	if err != ErrNoRedis {
		t.Fatalf("err = %v, want exactly ErrNoRedis", err)
	}
	const want = "redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER"
	if err.Error() != want {
		t.Fatalf("message = %q", err.Error())
	}
	if _, err := StartCluster(3); err != ErrNoRedis {
		t.Fatalf("StartCluster err = %v, want ErrNoRedis", err)
	}
}

func TestExternalAddr(t *testing.T) {
	srv := mustStart(t)
	t.Setenv(EnvExternalAddr, srv.Addr())
	ext, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	if ext.Addr() != srv.Addr() || ext.Port() != srv.Port() {
		t.Fatalf("external = %s, want %s", ext.Addr(), srv.Addr())
	}
	if err := ext.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ping(srv.Addr()); err != nil {
		t.Fatalf("Close of external server stopped it: %v", err)
	}
	if err := ext.Restart(); err == nil {
		t.Fatal("Restart of external server succeeded")
	}
}

func TestKeysSlot(t *testing.T) {
	// Reference values from CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"":             0,
		"a":            15495,
		"b":            3300,
		"c":            7365,
		"foo":          12182,
		"123456789":    12739,
		"{a}whatever":  15495,
		"x{b}y{c}":     3300,
		"foo{}{bar}":   8363,
		"{user1000}.x": 3443,
		"no{close":     7129,
	} {
		if got := keys.Slot(key); got != want {
			t.Errorf("keys.Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c, err := StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if len(c.Addrs()) != 3 || len(c.Nodes()) != 3 {
		t.Fatalf("Addrs = %v", c.Addrs())
	}
	ctx := ctxT(t)
	cc := c.Client()
	defer cc.Close()
	ns := testKeys(t)

	// Redis computes the same slots we do.
	node0 := c.Nodes()[0].Client()
	defer node0.Close()
	for _, k := range []string{"{a}x", "{b}x", "{c}x", ns} {
		if got, err := node0.ClusterKeySlot(ctx, k).Result(); err != nil || int(got) != keys.Slot(k) {
			t.Fatalf("CLUSTER KEYSLOT %q = %d, %v; KeySlot = %d", k, got, err, keys.Slot(k))
		}
	}

	// {a}, {b}, {c} hash to slots 15495, 3300, 7365: one per node.
	owners := map[string]string{}
	for _, tag := range []string{"a", "b", "c"} {
		key := "{" + tag + "}" + ns + ":k"
		if err := cc.Set(ctx, key, tag, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if got, err := cc.Get(ctx, key).Result(); err != nil || got != tag {
			t.Fatalf("GET %s = %q, %v", key, got, err)
		}
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		addr := m.Options().Addr
		if prev, dup := owners[addr]; dup {
			t.Fatalf("tags %s and %s both on %s", prev, tag, addr)
		}
		owners[addr] = tag
		// The key really lives on that node: a plain client reads it without MOVED.
		direct := redis.NewClient(&redis.Options{Addr: addr})
		got, err := direct.Get(ctx, key).Result()
		direct.Close()
		if err != nil || got != tag {
			t.Fatalf("direct GET %s on %s = %q, %v", key, addr, got, err)
		}
	}
	for _, a := range c.Addrs() {
		if _, ok := owners[a]; !ok {
			t.Fatalf("no key landed on node %s (owners %v)", a, owners)
		}
	}

	const script = `redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]); return redis.call('GET', KEYS[2])`
	same := []string{"{a}" + ns + ":1", "{a}" + ns + ":2"}
	if got, err := cc.Eval(ctx, script, same, "lua").Result(); err != nil || got != "lua" {
		t.Fatalf("EVAL same tag = %v, %v", got, err)
	}
	// Different tags: go-redis routes by the first key, the node refuses.
	diff := []string{"{a}" + ns + ":1", "{b}" + ns + ":1"}
	_, err = cc.Eval(ctx, script, diff, "lua").Result()
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL different tags: err = %v, want CROSSSLOT", err)
	}
}

// testKeys is a key prefix of this test's own (redistest.NewNamespace,
// which this package's tests cannot import: it imports this package).
func testKeys(t *testing.T) string {
	t.Helper()
	return "t" + strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.Itoa(rand.IntN(1<<30))
}
