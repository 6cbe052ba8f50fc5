package flow_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
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
		"redis+sentinel+cluster://h:1?master_name=m",
		"redis+sentinel://h:1/x?master_name=m&sentinel_password=secret",
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
	if o := tls.(*redis.Client).Options(); o.TLSConfig == nil || o.Username != "u" || o.Password != "p@ss" || o.DB != 3 {
		t.Fatalf("rediss+sentinel options: user %q, password %q, db %d, TLS %v", o.Username, o.Password, o.DB, o.TLSConfig != nil)
	}

	sen, err := redistest.StartSentinel("sluice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sen.Close() })
	ctx := context.Background()
	rdb := connect(t, "redis+sentinel://"+sen.Addr()+"?master_name="+sen.Name)
	port := func() string {
		t.Helper()
		info, err := rdb.Info(ctx, "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(info, "tcp_port:")
		p, _, _ := strings.Cut(rest, "\r\n")
		return p
	}
	if got, want := port(), sen.Master.Addr(); !strings.HasSuffix(want, ":"+got) {
		t.Fatalf("the Sentinel client talks to port %s, want the master %s", got, want)
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
	startWorker(t, rdb, reg, runtime.Options{Namespace: ns})
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
			waitState(t, c, id, flow.StateCompleted)
		}
		return ids
	}
	before := enqueue("before-")
	old := sen.Master.Client()
	defer old.Close()
	if n, err := old.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	if err := sen.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the client to follow the new master", func() bool {
		return strings.HasSuffix(sen.Master.Addr(), ":"+port())
	})
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
