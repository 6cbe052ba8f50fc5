package store_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// otherClient is a client Sluice cannot tell is a single server's (a
// user's wrapper, say): its calls declare every key.
type otherClient struct{ *redis.Client }

// declaredKeys records how many keys each script call declares.
type declaredKeys struct {
	mu     sync.Mutex
	counts []string
}

func (d *declaredKeys) DialHook(next redis.DialHook) redis.DialHook { return next }
func (d *declaredKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 2 && slices.Contains([]string{"fcall", "evalsha", "eval"}, strings.ToLower(cmd.Name())) {
			d.mu.Lock()
			d.counts = append(d.counts, a[2].(string))
			d.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (d *declaredKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestDeclaredKeys: a call to a single server declares sched alone and the
// scripts name the partition's other keys from its prefix; any other
// client declares all 22. Either way each job's keys are its partition's,
// with calls to two partitions interleaved (lib.lua keeps the names it
// made for the last partition).
func TestDeclaredKeys(t *testing.T) {
	type setup struct {
		name string
		rdb  redis.UniversalClient
		hook func(*declaredKeys)
		want string // keys each call declares
	}
	var setups []setup
	for _, b := range backends(t) {
		want := "1"
		if b.name == "cluster" {
			want = "22"
		}
		switch c := b.rdb.(type) {
		case *redis.Client:
			setups = append(setups, setup{b.name, c, func(d *declaredKeys) { c.AddHook(d) }, want})
		case *redis.ClusterClient:
			setups = append(setups, setup{b.name, c, func(d *declaredKeys) { c.AddHook(d) }, want})
		}
	}
	other := otherClient{env.Server.Client()}
	t.Cleanup(func() { other.Close() })
	setups = append(setups, setup{"redis, wrapped", other, func(d *declaredKeys) { other.AddHook(d) }, "22"})

	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			d := &declaredKeys{}
			s.hook(d)
			st := store.New(s.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: time.Hour,
				RetainArchived: time.Hour, RetainCancelled: time.Hour, CrashLimit: 3})
			p0, p1 := st.Partition("q", 0), st.Partition("q", 1)
			add := func(p keys.Partition, j store.NewJob) {
				t.Helper()
				j.Kind, j.Payload, j.MaxAttempts = "k", []byte("x"), 3
				if res, err := st.Enqueue(ctx, p, []store.NewJob{j}); err != nil || res[0].Err != nil || res[0].Status != store.Added {
					t.Fatalf("enqueue %s: %v %+v", j.Local, err, res)
				}
			}
			add(p0, store.NewJob{Local: "a0"})
			add(p1, store.NewJob{Local: "a1", Priority: 3})
			add(p0, store.NewJob{Local: "d0", Delay: time.Hour})
			for p, want := range map[keys.Partition][]string{p0: {"a0"}, p1: nil} {
				if got, _ := s.rdb.LRange(ctx, p.Available(0), 0, -1).Result(); !slices.Equal(got, want) {
					t.Errorf("%s priority 0 lists %v, want %v", p.Prefix(), got, want)
				}
			}
			if got, _ := s.rdb.LRange(ctx, p1.Available(3), 0, -1).Result(); !slices.Equal(got, []string{"a1"}) {
				t.Errorf("%s priority 3 lists %v, want [a1]", p1.Prefix(), got)
			}
			for _, c := range []struct {
				p    keys.Partition
				want string
			}{{p1, "a1"}, {p0, "a0"}} {
				res, err := st.Claim(ctx, c.p, store.ClaimRequest{N: 5, Lease: time.Minute, Worker: "w", Nonce: "n" + c.want, ID: "n" + c.want, PromoteLimit: 100})
				if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Local != c.want {
					t.Fatalf("claim on %s: %v %+v, want %s alone", c.p.Prefix(), err, res, c.want)
				}
				if n := runningJobs(t, ctx, s.rdb, c.p); n != 1 {
					t.Errorf("%s runs %d jobs, want 1", c.p.Prefix(), n)
				}
				j := res.Jobs[0]
				acked, _, err := st.Ack(ctx, c.p, []store.Ack{{Lease: store.Lease{Local: j.Local, LeaseID: j.LeaseID, Fence: j.Fence}, Code: store.CodeOK}})
				if err != nil || acked[0].State != "completed" {
					t.Fatalf("ack %s: %v %+v", c.want, err, acked)
				}
			}
			for p, want := range map[keys.Partition]map[string]string{
				p0: {"completed": "1", "scheduled": "1"}, p1: {"completed": "1"},
			} {
				got, _ := s.rdb.HGetAll(ctx, p.Stats()).Result()
				for state, n := range want {
					if got[state] != n {
						t.Errorf("%s counts %s jobs %q, want %s (%v)", p.Prefix(), state, got[state], n, got)
					}
				}
				if n, _ := s.rdb.ZCard(ctx, p.Terminal("completed")).Result(); n != 1 {
					t.Errorf("%s keeps %d completed jobs, want 1", p.Prefix(), n)
				}
			}
			if n, _ := s.rdb.Exists(ctx, p1.Job("a0"), p0.Job("a1"), p1.Job("d0")).Result(); n != 0 {
				t.Errorf("%d jobs written under the other partition", n)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.counts) == 0 {
				t.Fatal("no script call seen")
			}
			for _, n := range d.counts {
				if n != s.want {
					t.Fatalf("calls declared %v keys, want %s each", d.counts, s.want)
				}
			}
		})
	}
}
