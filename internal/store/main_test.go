package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

var env redistest.Env

func TestMain(m *testing.M) { redistest.Main(m, &env, true) }

// backend is one kind of Redis every script test runs on.
type backend struct {
	name string
	rdb  redis.UniversalClient
}

// backends returns miniredis, a real redis-server and a 3-node cluster.
func backends(t *testing.T) []backend {
	t.Helper()
	m := miniredis.RunT(t)
	// miniredis runs scripts in this process, in gopher-lua: under -race
	// on a loaded machine the largest (effects of megabytes) take seconds,
	// past go-redis's default read timeout of 3 s, which is no subject of
	// these tests (CI failed so at load 4)
	mini := redis.NewClient(&redis.Options{Addr: m.Addr(), ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	real := env.Server.Client()
	cl := env.Cluster.Client()
	t.Cleanup(func() {
		mini.Close()
		real.Close()
		cl.Close()
	})
	return []backend{{"miniredis", mini}, {"redis", real}, {"cluster", cl}}
}

// testClock is the store time the tests control.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t   *testing.T
	ctx context.Context
	rdb redis.UniversalClient
	st  *store.Store
	clk *testClock
	p   keys.Partition
}

const (
	retainCompleted = time.Hour
	retainArchived  = 7 * 24 * time.Hour
	retainCancelled = 2 * time.Hour
)

func newFixture(t *testing.T, b backend) *fixture {
	t.Helper()
	clk := &testClock{now: epoch}
	st := store.New(b.rdb, store.Config{
		NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted, RetainArchived: retainArchived,
		RetainCancelled: retainCancelled, CrashLimit: 3, CrashDelay: time.Second, Now: clk.Now,
	})
	return &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
}

func (f *fixture) enqueue(jobs ...store.NewJob) {
	f.t.Helper()
	for i := range jobs {
		if jobs[i].Kind == "" {
			jobs[i].Kind = "k"
		}
		if jobs[i].Payload == nil {
			jobs[i].Payload = []byte("payload-" + jobs[i].Local)
		}
		if jobs[i].MaxAttempts == 0 {
			jobs[i].MaxAttempts = 3
		}
	}
	res, err := f.st.Enqueue(f.ctx, f.p, jobs)
	if err != nil {
		f.t.Fatalf("enqueue: %v", err)
	}
	for i, r := range res {
		if r.Status != store.Added || r.Err != nil {
			f.t.Fatalf("enqueue %s: %+v", jobs[i].Local, r)
		}
	}
}

func (f *fixture) claim(n int, worker string) store.ClaimResult {
	f.t.Helper()
	res, err := f.st.Claim(f.ctx, f.p, store.ClaimRequest{
		N: n, Lease: 30 * time.Second, Worker: worker, Nonce: worker + "-" + fmt.Sprint(time.Now().UnixNano()), PromoteLimit: 100,
	})
	if err != nil {
		f.t.Fatalf("claim: %v", err)
	}
	return res
}

// claimLeases claims up to n jobs and returns their leases by job ID.
func (f *fixture) claimLeases(n int, worker string) map[string]store.Lease {
	f.t.Helper()
	held := map[string]store.Lease{}
	for _, j := range f.claim(n, worker).Jobs {
		held[j.Local] = lease(j)
	}
	return held
}

func (f *fixture) claimOne(worker string) *store.Job {
	f.t.Helper()
	res := f.claim(1, worker)
	if len(res.Jobs) != 1 {
		f.t.Fatalf("claim: got %d jobs, want 1", len(res.Jobs))
	}
	return res.Jobs[0]
}

// runningJob enqueues the job "job" and claims it for worker "w": the
// attempt most lease and effect tests start from.
func (f *fixture) runningJob() *store.Job {
	f.t.Helper()
	f.enqueue(store.NewJob{Local: "job"})
	return f.claimOne("w")
}

// reap, promote and sweep run the part of a maintenance pass (Maintain)
// each names, with that limit.
func (f *fixture) reap(limit int) ([]store.Reaped, error) {
	m, err := f.st.Maintain(f.ctx, f.p, limit, 0, 0)
	return m.Reaped, err
}

// reapedStates is the state each reaped job went to, by job ID.
func reapedStates(reaped []store.Reaped) map[string]string {
	got := map[string]string{}
	for _, r := range reaped {
		got[r.Local] = r.State
	}
	return got
}

func (f *fixture) promote(limit int) (int, error) {
	m, err := f.st.Maintain(f.ctx, f.p, 0, limit, 0)
	return m.Promoted, err
}

func (f *fixture) sweep(limit int) (int, error) {
	m, err := f.st.Maintain(f.ctx, f.p, 0, 0, limit)
	return m.Deleted, err
}

func (f *fixture) get(local string) (*store.Job, []sluicetype.ErrorRecord) {
	f.t.Helper()
	j, recs, err := f.st.Get(f.ctx, keys.Ref{Partition: f.p, Local: local})
	if err != nil {
		f.t.Fatalf("get %s: %v", local, err)
	}
	return j, recs
}

func (f *fixture) ack(j *store.Job, a store.Ack) store.AckResult {
	f.t.Helper()
	a.Lease = lease(j)
	res, _, err := f.st.Ack(f.ctx, f.p, []store.Ack{a})
	if err != nil {
		f.t.Fatalf("ack: %v", err)
	}
	return res[0]
}

func lease(j *store.Job) store.Lease {
	return store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}
}

// availableOrder lists the available jobs of one priority, head first.
func (f *fixture) availableOrder(prio int) []string {
	f.t.Helper()
	ids, err := f.rdb.LRange(f.ctx, f.p.Available(prio), 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

func (f *fixture) score(zset, member string) (float64, bool) {
	f.t.Helper()
	s, err := f.rdb.ZScore(f.ctx, zset, member).Result()
	if err == redis.Nil {
		return 0, false
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return s, true
}

// runningJobs is how many jobs p's running index holds (not its anchor,
// keys.RunAnchor).
func runningJobs(t *testing.T, ctx context.Context, rdb redis.UniversalClient, p keys.Partition) int {
	t.Helper()
	ids, err := rdb.ZRange(ctx, p.Running(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(slices.DeleteFunc(ids, func(id string) bool { return id == keys.RunAnchor }))
}

// due is the due time of a job in the partition's scheduled index (the
// sched zset or a bucket of later jobs: store.SchedIndex), and whether it
// is there.
func (f *fixture) due(local string) (float64, bool) {
	f.t.Helper()
	idx, err := store.SchedIndex(f.ctx, f.rdb, f.p)
	if err != nil {
		f.t.Fatal(err)
	}
	at, ok := idx[local]
	return float64(at), ok
}

// checkpoint writes one checkpoint.
func (f *fixture) checkpoint(c store.Checkpoint) (int, error) {
	f.t.Helper()
	r, _ := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{c})
	return r[0].Outboxed, r[0].Err
}
