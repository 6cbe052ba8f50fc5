package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/runtime"
)

// TestConnectSentinel: a redis+sentinel URL gives a client that finds the
// master through Sentinel; jobs enqueued and run before a failover stay
// completed on the promoted replica, and the same client and worker carry
// on there. Bad Sentinel URLs are ErrInvalid without their passwords.
func TestConnectSentinel(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"redis+sentinel://h:1",                            // no master name
		"redis+sentinel://u:secret@h:1?master_name=m&x=1", // unknown option
		"redis+sentinel://h:1,,h:2?master_name=m",
		"redis+sentinel://h:1?master_name=m&master_name=n",
		"redis+sentinel+cluster://h:1?master_name=m",
		"redis+sentinel://h:1/x?master_name=m&sentinel_password=secret",
		"redis+sentinel://u:p%zzsecret@h:1?master_name=m", // a bad escape in the password
		"redis+sentinel://h:1/%zz?master_name=m&password=secret",
	} {
		_, err := flow.Connect(bad)
		if !errors.Is(err, flow.ErrInvalid) {
			t.Errorf("Connect(%q) = %v, want ErrInvalid", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows a password: %v", err)
		}
	}
	tls := connect(t, "rediss+sentinel://u:p%40ss@a.invalid:1,b.invalid:2/3?master_name=m&sentinel_password=sp&dial_timeout=1s")
	// TLS verifies each host dialled, not the first Sentinel everywhere
	if o := tls.(*redis.Client).Options(); o.TLSConfig == nil || o.TLSConfig.ServerName != "" || o.Username != "u" || o.Password != "p@ss" || o.DB != 3 {
		t.Fatalf("rediss+sentinel options: user %q, password %q, db %d, TLS %+v", o.Username, o.Password, o.DB, o.TLSConfig)
	}

	sen, err := redisproc.StartSentinel("sluice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sen.Close() })
	ctx := context.Background()
	rdb := connect(t, "redis+sentinel://"+sen.Addr()+"?master_name="+sen.Name)
	// onMaster says whether rdb talks to sen.Master: false too while it
	// switches over, when a command can fail on a connection it closes
	onMaster := func() bool {
		info, err := rdb.Info(ctx, "server").Result()
		_, rest, _ := strings.Cut(info, "tcp_port:")
		port, _, _ := strings.Cut(rest, "\r\n")
		return err == nil && strings.HasSuffix(sen.Master.Addr(), ":"+port)
	}
	if !onMaster() {
		t.Fatalf("the Sentinel client does not talk to the master %s", sen.Master.Addr())
	}

	reg := flow.NewRegistry()
	var mu sync.Mutex
	runs := map[string]int{}
	if err := flow.Register(reg, func(_ context.Context, j *flow.Job[email]) error {
		mu.Lock()
		defer mu.Unlock()
		runs[j.Args.To]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, ns := newClient(t, rdb, reg)
	w := testkit.StartWorker(t, rdb, reg, runtime.Options{Namespace: ns}, nil)
	enqueue := func(prefix string) []string {
		t.Helper()
		var ids []string
		for i := range 20 {
			res, err := c.Enqueue(ctx, email{To: prefix + string(rune('a'+i))})
			if err != nil {
				t.Fatalf("enqueue %s: %v", prefix, err)
			}
			ids = append(ids, res.ID)
		}
		for _, id := range ids {
			testkit.WaitState(t, c, w.Sig, id, flow.StateCompleted)
		}
		return ids
	}
	before := enqueue("before-")
	// WAIT covers the writes before this connection's own last one
	old := sen.Master.Client()
	defer old.Close()
	if err := old.Set(ctx, ns+":before-failover", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := old.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	if err := sen.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	// Polled: Sentinel and go-redis switch over on their own time.
	redistest.Eventually(t, "the client to follow the new master", onMaster)
	after := enqueue("after-")
	for _, id := range append(before, after...) {
		if info, err := c.Job(ctx, id); err != nil || info.State != flow.StateCompleted {
			t.Fatalf("job %s after the failover: %+v, %v", id, info, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 40 {
		t.Fatalf("%d distinct jobs ran, want 40", len(runs))
	}
}
