package main

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redisproc"
	"github.com/sluicehq/sluice/internal/store"
)

// The model is only worth measuring if it does what it claims to keep:
// these check, on a real redis-server, that each model step leases a job
// once, checks lease and fence on every ack, and answers a re-sent call as
// its first run did.

func server(t *testing.T) *redis.Client {
	t.Helper()
	srv, err := redisproc.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rdb := srv.Client()
	t.Cleanup(func() { rdb.Close() })
	if err := loadModel(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
	return rdb
}

func TestModelPaths(t *testing.T) {
	rdb := server(t)
	ctx := context.Background()
	for _, p := range []path{sluicePath{}, modelPath{"model"}, modelPath{"model2"}, modelPath{"model3"}} {
		t.Run(p.name(), func(t *testing.T) {
			if _, err := measure(ctx, rdb, p, 120, "test", false); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.DBSize(ctx).Result(); err != nil || n > 40 {
				// what is left: counters, call records, the minute's tally
				t.Errorf("%d keys left after every job completed (err %v)", n, err)
			}
			rdb.FlushAll(ctx)
		})
	}
}

func TestModelFencing(t *testing.T) {
	rdb := server(t)
	ctx := context.Background()
	for _, fn := range []string{"model", "model2", "model3"} {
		t.Run(fn, func(t *testing.T) {
			s := modelPath{fn}.open(rdb, "fence-"+fn).(*modelSession)
			a, b := keys.NewLocal(), keys.NewLocal()
			// b twice in one call: added once
			v, err := s.call(ctx, fn+"_enqueue", enqueueArgs(fn, a, b, b)...).Int64Slice()
			if err != nil || len(v) != 3 || v[0] != 1 || v[1] != 1 || v[2] != 0 {
				t.Fatalf("enqueue of a, b, b = %v, %v; want [1 1 0]", v, err)
			}
			// a listed again while it runs: leased once
			s.rdb.RPush(ctx, s.keys[0], a)
			leases, err := s.claim(ctx, 10)
			if err != nil || len(leases) != 2 {
				t.Fatalf("claim = %v, %v; want a and b once each", leases, err)
			}
			if again, err := s.claim(ctx, 10); err != nil || len(again) != 0 {
				t.Fatalf("second claim = %v, %v; want nothing (a's repeat entry is stale)", again, err)
			}
			wrong := []store.Lease{
				{Local: leases[0].Local, LeaseID: leases[0].LeaseID, Fence: leases[0].Fence + 1},
				{Local: leases[1].Local, LeaseID: "other.1", Fence: leases[1].Fence},
			}
			if got := ack(t, s, "bad", wrong); got[0] != "stale" || got[1] != "stale" {
				t.Fatalf("acks with a wrong fence and a wrong lease = %v; want stale, stale", got)
			}
			right := append(leases, leases[0]) // the first twice: the repeat is stale
			first := ack(t, s, "good", right)
			if first[0] != "completed" || first[1] != "completed" || first[2] != "stale" {
				t.Fatalf("ack = %v; want completed, completed, stale", first)
			}
			// the same call again, as go-redis re-sends one whose reply was
			// lost: the same answer, nothing applied twice
			if again := ack(t, s, "good", right); again[0] != "completed" || again[1] != "completed" {
				t.Fatalf("re-sent ack = %v; want %v", again, first)
			}
			if n, _ := rdb.HGet(ctx, s.keys[3], "running").Int(); n != 0 {
				t.Errorf("running counter = %d after both completed; want 0", n)
			}
		})
	}
}

func enqueueArgs(fn string, ids ...string) []any {
	args := []any{len(ids)}
	for _, id := range ids {
		if fn != "model" {
			args = append(args, id, definition)
		} else {
			args = append(args, id, kind, payload)
		}
	}
	return args
}

// ack acks leases as completions under call ID call.
func ack(t *testing.T, s *modelSession, call string, leases []store.Lease) []string {
	t.Helper()
	args := []any{s.pfx, call, s.pfx + "wake", "0", len(leases)}
	for _, l := range leases {
		args = append(args, l.Local, l.LeaseID, l.Fence)
	}
	v, err := s.rdb.FCall(context.Background(), s.fn+"_ack", s.keys, args...).StringSlice()
	if err != nil || len(v) != len(leases) {
		t.Fatalf("ack = %v, %v", v, err)
	}
	return v
}

// TestModel3LifeHash: the third step deletes a job's life hash only when
// the job's fence says it has one, and never touches a key of a plain
// job's name, whatever it holds.
func TestModel3LifeHash(t *testing.T) {
	rdb := server(t)
	ctx := context.Background()
	s := modelPath{"model3"}.open(rdb, "life").(*modelSession)
	a, b := keys.NewLocal(), keys.NewLocal()
	if err := s.enqueue(ctx, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, s.keys[5], a, "3 h")
	rdb.HSet(ctx, s.pfx+"j:"+a, "attempt", "1")
	rdb.Set(ctx, s.pfx+"j:"+b, "not the model's", 0)
	leases, err := s.claim(ctx, 10)
	if err != nil || len(leases) != 2 {
		t.Fatalf("claim = %v, %v; want a and b", leases, err)
	}
	for _, l := range leases {
		if want := map[string]int64{a: 4, b: 1}[l.Local]; l.Fence != want {
			t.Errorf("job %s leased at fence %d; want %d", l.Local, l.Fence, want)
		}
	}
	if got := ack(t, s, "done", leases); got[0] != "completed" || got[1] != "completed" {
		t.Fatalf("ack = %v; want both completed", got)
	}
	if n, _ := rdb.Exists(ctx, s.pfx+"j:"+a).Result(); n != 0 {
		t.Errorf("a's life hash is still there after its completion")
	}
	if v, _ := rdb.Get(ctx, s.pfx+"j:"+b).Result(); v != "not the model's" {
		t.Errorf("the value under b's name = %q; the ack of a plain job touched it", v)
	}
	if n, _ := rdb.HLen(ctx, s.keys[6]).Result(); n != 0 {
		t.Errorf("%d definitions left after both completed", n)
	}
}
