package flow_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
)

func connect(t *testing.T, url string) redis.UniversalClient {
	t.Helper()
	rdb, err := flow.Connect(url)
	if err != nil {
		t.Fatalf("Connect(%q): %v", url, err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestConnect: server and cluster URLs, ACL users, TLS settings and bad
// URLs.
func TestConnect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := env.Server.Addr()
	if err := connect(t, "redis://"+addr+"/0").Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// an ACL user of its own, removed at the end
	user := redistest.NewNamespace(t)
	admin := realRedis(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">s3cret:x", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	rdb := connect(t, "redis://"+user+":s3cret%3Ax@"+addr)
	if who, err := rdb.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != user {
		t.Fatalf("ACL WHOAMI = %q, %v", who, err)
	}
	if err := connect(t, "redis://"+user+":wrong@"+addr).Ping(ctx).Err(); err == nil {
		t.Fatal("a wrong password connected")
	}

	cl := connect(t, "redis+cluster://"+strings.Join(env.Cluster.Addrs(), ","))
	if _, ok := cl.(*redis.ClusterClient); !ok {
		t.Fatalf("cluster URL gave a %T", cl)
	}
	c, err := flow.NewClient(cl, flow.ClientOptions{Namespace: redistest.NewNamespace(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Enqueue(ctx, email{To: "x"}); err != nil {
		t.Fatalf("enqueue on the cluster: %v", err)
	}
	if _, ok := connect(t, "redis://"+env.Cluster.Addrs()[0]+","+env.Cluster.Addrs()[1]).(*redis.ClusterClient); !ok {
		t.Fatal("a list of addresses is not a cluster")
	}

	tls := connect(t, "rediss://u:p@example.invalid:6380/2")
	o := tls.(*redis.Client).Options()
	if o.TLSConfig == nil || o.TLSConfig.ServerName != "example.invalid" || o.Username != "u" || o.Password != "p" || o.DB != 2 {
		t.Fatalf("rediss options: %+v", o)
	}
	ctls := connect(t, "rediss+cluster://u:p@a.invalid:1,b.invalid:2?dial_timeout=1s")
	if co := ctls.(*redis.ClusterClient).Options(); co.TLSConfig == nil || len(co.Addrs) != 2 || co.Username != "u" {
		t.Fatalf("rediss+cluster options: %+v", co)
	}

	for _, bad := range []string{"localhost:6379", "http://x", "redis://a,,b", "redis+cluster://a:1/3", "redis://h/x", "redis://u:secret@h?bogus=1", "redis://u:p%zzsecret@h"} {
		_, err := flow.Connect(bad)
		if !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("Connect(%q) = %v, want ErrInvalid", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// TestConnectHidesUnencodedPassword: a password holding '/', '?' or '@'
// that the caller forgot to percent-encode (base64 passwords hold '/')
// makes the URL unparsable; the error must not show the password, in
// the URL it quotes nor in the parser's cause.
func TestConnectHidesUnencodedPassword(t *testing.T) {
	for _, u := range []string{
		"redis://app:s3cr3t/Pw+x@redis.internal:6379/0",
		"redis://:s3cr3t/Pw+x@redis.internal:6379",
		"rediss+cluster://app:s3cr3t/Pw@a:6379,b:6379",
		"redis://app:s3cr3t?Pw@redis.internal:6379",
		"redis://app:s3c@r3t/Pw@redis.internal:6379/0",
	} {
		c, err := flow.Connect(u)
		if err == nil {
			c.Close()
			continue
		}
		if strings.Contains(err.Error(), "s3c") || strings.Contains(err.Error(), "r3t") {
			t.Errorf("Connect(%q): the error shows the password: %v", u, err)
		}
	}
}

// TestConnectAddressesWithoutPort: the README and `sluice --help` give
// redis+cluster://h1,h2 and redis+sentinel://s1,s2?master_name=m. Every
// address may leave out its port, not only the first (the others were
// refused, "unable to parse addr param"): a cluster node's is 6379, a
// Sentinel's 26379 (Redis's own ports; TestDefaultPort).
func TestConnectAddressesWithoutPort(t *testing.T) {
	t.Parallel()
	cl := connect(t, "redis+cluster://h1,h2:7001,h3")
	if got := cl.(*redis.ClusterClient).Options().Addrs; strings.Join(got, ",") != "h1:6379,h2:7001,h3:6379" {
		t.Errorf("cluster addresses %v, want h1:6379 h2:7001 h3:6379", got)
	}
	connect(t, "redis+sentinel://s1,s2:26380,s3?master_name=m")
	connect(t, "redis+sentinel://u:p@s1,[::1]?master_name=m")
}
