package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/redistest"
)

// firstWrite cancels its context once something is written.
type firstWrite struct {
	mu     sync.Mutex
	b      bytes.Buffer
	cancel context.CancelFunc
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	w.cancel()
	return n, err
}

// TestWatchHeaderInStoreTime: `queues stats --watch` heads each
// block with the time of the reading ("2026-12-02 13:04:04.339 UTC, every
// 1s"), and the rates under it are counted in Redis's minutes. The header
// was the host's clock: with Redis's clock an hour behind the host's (as
// TestDurationAgoInStoreTime sets it), the block said it was read an hour
// after the time Redis, and every other time the CLI prints (finish
// times, heartbeats), had then.
func TestWatchHeaderInStoreTime(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	redisNow := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	m.SetTime(redisNow)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: context.Background(), ns: ns, url: "redis://" + m.Addr(), c: c}
	f.enqueue("a", email{To: "ann"})
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	out := &firstWrite{cancel: cancel}
	var errb bytes.Buffer
	if code := f.runCtx(ctx, out, &errb, "queues", "stats", "--watch", "--interval", "1s"); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	header, _, _ := strings.Cut(out.b.String(), "\n")
	stamp, _, ok := strings.Cut(header, " UTC")
	if !ok {
		t.Fatalf("no time in the header %q", header)
	}
	at, err := time.Parse("2006-01-02 15:04:05.000", stamp)
	if err != nil {
		t.Fatalf("header %q: %v", header, err)
	}
	if d := at.Sub(redisNow.UTC()); d < -time.Minute || d > time.Minute {
		t.Fatalf("the watch header says %s UTC; Redis's time was %s: %v off (the host's clock, not Redis's)",
			stamp, redisNow.UTC().Format("2006-01-02 15:04:05.000"), d.Round(time.Second))
	}
}
