package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestDurationAgoInStoreTime: --before 2h means finished more than two
// hours before Redis's time, which the jobs' finish times are kept in,
// whatever the clock of the machine running the command. Here Redis's
// clock (miniredis, no clock injected) is an hour behind the host's: of
// a job finished 3 hours ago and one finished 90 minutes ago (store time),
// `jobs delete --before 2h` deletes the first only. (It read "2h ago" by
// the host's clock, an hour later in store time, and deleted both.)
func TestDurationAgoInStoreTime(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	now := time.Now().Add(-time.Hour).Truncate(time.Millisecond) // Redis's clock, an hour behind
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	ns := redistest.NewNamespace(t)
	c, err := flow.NewClient(rdb, flow.ClientOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(rdb, store.Config{NS: ns, RetainArchived: 24 * time.Hour})
	f := &fixture{t: t, ctx: context.Background(), ns: ns, url: "redis://" + m.Addr(), c: c, st: st}
	p := keys.Partition{NS: ns, Queue: "default", Index: 0}
	// each job archived (its only attempt failed) at its own store time
	for _, j := range []struct {
		id string
		at time.Duration
	}{{"old", -3 * time.Hour}, {"recent", -90 * time.Minute}} {
		m.SetTime(now.Add(j.at))
		f.enqueue(j.id, email{To: j.id}, flow.WithMaxAttempts(1))
		res, err := st.Claim(f.ctx, p, store.ClaimRequest{N: 1, Lease: time.Minute, Worker: "w", Nonce: j.id})
		if err != nil || len(res.Jobs) != 1 {
			t.Fatalf("claim %s: %+v, %v", j.id, res, err)
		}
		l := res.Jobs[0]
		if _, _, err := st.Ack(f.ctx, p, []store.Ack{{Code: store.CodeRetry, Reason: "error", Message: "boom",
			Lease: store.Lease{Local: l.Local, LeaseID: l.LeaseID, Fence: l.Fence}}}); err != nil {
			t.Fatal(err)
		}
	}
	m.SetTime(now)
	f.must("jobs", "delete", "--queue", "default", "--state", "archived", "--before", "2h")
	exists := func(id string) bool {
		t.Helper()
		_, err := c.Job(f.ctx, "default:0:"+id)
		if err != nil && !errors.Is(err, flow.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if exists("old") || !exists("recent") {
		t.Fatalf("jobs delete --before 2h: old (finished 3h ago) kept %v, recent (90m ago) kept %v; want only recent kept: "+
			"\"2h ago\" was read by the host's clock, an hour ahead of Redis's", exists("old"), exists("recent"))
	}
}
