package store_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/idempotency"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/sluicetype"
)

// effectCase is a commit's effect list; key names are suffixes of the
// partition's tag, so every key is in the job's slot.
type effectCase struct {
	name  string
	setup func(f *fixture) // writes made before the commit
	fx    func(f *fixture) []sluicetype.Effect
}

func (f *fixture) key(name string) string { return f.p.Tag() + ":" + name }

func fx(op, key string, args ...string) sluicetype.Effect {
	return sluicetype.Effect{Op: op, Key: key, Args: args}
}

// The greatest stream entry ID, and the one before it.
const (
	maxID        = "18446744073709551615-18446744073709551615"
	lastButOneID = "18446744073709551615-18446744073709551614"
)

// xadd writes an entry with ID id to stream key (and deletes it again
// when emptied: the stream remembers its last ID).
func xadd(key, id string, emptied bool) func(f *fixture) {
	return func(f *fixture) {
		if err := f.rdb.XAdd(f.ctx, &redis.XAddArgs{Stream: f.key(key), ID: id, Values: []any{"f", "v"}}).Err(); err != nil {
			f.t.Fatal(err)
		}
		if emptied {
			f.rdb.XDel(f.ctx, f.key(key), id)
		}
	}
}

// invalidEffectCases each end with an effect Redis would refuse, after a
// valid IncrBy of "bal": a commit must apply none of it.
func invalidEffectCases() []effectCase {
	many := make([]string, 9001)
	many[0] = "*"
	for i := 1; i < len(many); i++ {
		many[i] = "v" + strconv.Itoa(i)
	}
	set := func(key, v string) func(f *fixture) {
		return func(f *fixture) { f.rdb.Set(f.ctx, f.key(key), v, 0) }
	}
	one := func(e func(f *fixture) sluicetype.Effect) func(f *fixture) []sluicetype.Effect {
		return func(f *fixture) []sluicetype.Effect {
			return []sluicetype.Effect{fx("INCRBY", f.key("bal"), "-100"), e(f)}
		}
	}
	return []effectCase{
		{name: "ZAdd NaN", fx: one(func(f *fixture) sluicetype.Effect { return fx("ZADD", f.key("z"), "NaN", "m") })},
		{name: "ZAdd flag", fx: one(func(f *fixture) sluicetype.Effect { return fx("ZADD", f.key("z"), "NX", "1", "m") })},
		{name: "ZAdd score underflows", fx: one(func(f *fixture) sluicetype.Effect { return fx("ZADD", f.key("z"), "1e-400", "m") })},
		{name: "ZAdd hex score underflows", fx: one(func(f *fixture) sluicetype.Effect { return fx("ZADD", f.key("z"), "0x1p-1100", "m") })},
		{name: "ZAdd score overflows", fx: one(func(f *fixture) sluicetype.Effect { return fx("ZADD", f.key("z"), "-1e400", "m") })},
		{name: "Set PX 0", fx: one(func(f *fixture) sluicetype.Effect { return fx("SET", f.key("s"), "v", "PX", "0") })},
		{name: "Expire negative", fx: one(func(f *fixture) sluicetype.Effect { return fx("PEXPIRE", f.key("bal"), "-1") })},
		{name: "idempotency.Set negative TTL", fx: one(func(f *fixture) sluicetype.Effect { return idempotency.Set(f.key("s"), "v", -time.Second) })},
		{name: "Set then IncrBy", fx: func(f *fixture) []sluicetype.Effect {
			return []sluicetype.Effect{fx("INCRBY", f.key("bal"), "-100"), fx("SET", f.key("s"), "x"), fx("INCRBY", f.key("s"), "1")}
		}},
		{name: "IncrBy overflow", setup: set("big", "9223372036854775800"),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("big"), "8") })},
		{name: "IncrBy underflow", setup: set("big", "-9223372036854775800"),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("big"), "-9") })},
		{name: "IncrBy twice past the top", setup: set("big", "9223372036854775000"),
			fx: func(f *fixture) []sluicetype.Effect {
				return []sluicetype.Effect{fx("INCRBY", f.key("bal"), "-100"), fx("INCRBY", f.key("big"), "800"), fx("INCRBY", f.key("big"), "8")}
			}},
		{name: "IncrBy a value Redis does not read as an integer", setup: set("zero", "007"),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("zero"), "1") })},
		// values of megabytes, where gopher-lua's matcher (miniredis)
		// recursed per character and ended the process (megabytes_test.go)
		{name: "IncrBy a value of megabytes", setup: set("long", megabytes),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("long"), "1") })},
		{name: "HIncrBy a field of megabytes", setup: func(f *fixture) { f.rdb.HSet(f.ctx, f.key("h"), "f", megabytes) },
			fx: one(func(f *fixture) sluicetype.Effect { return fx("HINCRBY", f.key("h"), "f", "1") })},
		{name: "ZAdd a mantissa of megabytes that underflows", fx: one(func(f *fixture) sluicetype.Effect {
			return fx("ZADD", f.key("z"), "0."+strings.Repeat("0", 3<<20)+"1e400", "m")
		})},
		{name: "IncrBy not an integer", fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("n"), "+5") })},
		{name: "HIncrBy overflow", setup: func(f *fixture) { f.rdb.HSet(f.ctx, f.key("h"), "f", "9223372036854775807") },
			fx: one(func(f *fixture) sluicetype.Effect { return fx("HINCRBY", f.key("h"), "f", "1") })},
		{name: "HSet then HIncrBy a text field", fx: func(f *fixture) []sluicetype.Effect {
			return []sluicetype.Effect{fx("INCRBY", f.key("bal"), "-100"), fx("HSET", f.key("h"), "f", "x"), fx("HINCRBY", f.key("h"), "f", "1")}
		}},
		{name: "HSet odd arguments", fx: one(func(f *fixture) sluicetype.Effect { return fx("HSET", f.key("h"), "f", "v", "g") })},
		{name: "XAdd too long for unpack", fx: one(func(f *fixture) sluicetype.Effect { return fx("XADD", f.key("x"), many...) })},
		// Redis refuses an entry once a stream's last generated ID is the
		// greatest there is, even after that entry was deleted
		{name: "XAdd to a stream whose IDs are used up", setup: xadd("x", maxID, false),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("XADD", f.key("x"), "*", "f", "v") })},
		{name: "XAdd to a stream whose IDs are used up, emptied", setup: xadd("x", maxID, true),
			fx: one(func(f *fixture) sluicetype.Effect { return fx("XADD", f.key("x"), "*", "f", "v") })},
		{name: "XAdd twice to a stream with one ID left", setup: xadd("x", lastButOneID, false),
			fx: func(f *fixture) []sluicetype.Effect {
				return []sluicetype.Effect{fx("INCRBY", f.key("bal"), "-100"), fx("XADD", f.key("x"), "*", "f", "v"), fx("XADD", f.key("x"), "*", "f", "w")}
			}},
		{name: "wrong type", setup: func(f *fixture) { f.rdb.RPush(f.ctx, f.key("l"), "a") },
			fx: one(func(f *fixture) sluicetype.Effect { return fx("INCRBY", f.key("l"), "1") })},
		{name: "unsupported op", fx: one(func(f *fixture) sluicetype.Effect { return fx("DEL", f.key("bal")) })},
	}
}

// TestEffectsAllOrNothing: a commit whose last effect Redis would refuse
// writes nothing, neither its valid effects nor its checkpoint, whether
// Go refuses it first or the script does (each is checked alone: the
// script through CheckpointUnchecked).
func TestEffectsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, tc := range invalidEffectCases() {
			for _, path := range []string{"store", "script"} {
				t.Run(b.name+"/"+tc.name+"/"+path, func(t *testing.T) {
					f := newFixture(t, b)
					if tc.setup != nil {
						tc.setup(f)
					}
					j := f.runningJob()
					c := store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "c", Effects: tc.fx(f)}
					if path == "store" {
						_, err := f.checkpoint(c)
						var ee *sluicetype.EffectError
						if !errors.As(err, &ee) && !errors.Is(err, store.ErrInvalidEffect) {
							t.Fatalf("checkpoint: %v, want an effect error", err)
						}
					} else {
						status, detail, err := f.st.CheckpointUnchecked(f.ctx, f.p, c)
						if err != nil || status != "effect_error" {
							t.Fatalf("script: %s %v %v, want effect_error", status, detail, err)
						}
					}
					if n := exists(t, f, f.key("bal"), f.p.Steps("job")); n != 0 {
						t.Fatalf("a refused commit wrote %d keys", n)
					}
				})
			}
		}
	}
}

// TestEffectsAtTheLimits: effects at the edge of what Redis takes apply
// whole: an IncrBy to the largest integer, 9,000 members in one SAdd
// (written in chunks), a field set then incremented, a 1 ms TTL.
func TestEffectsAtTheLimits(t *testing.T) {
	t.Parallel()
	members := make([]string, 9000)
	for i := range members {
		members[i] = "m" + strconv.Itoa(i)
	}
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.rdb.Set(f.ctx, f.key("big"), "9223372036854775800", 0)
			xadd("x", lastButOneID, false)(f)
			j := f.runningJob()
			effects := []sluicetype.Effect{
				fx("INCRBY", f.key("big"), "7"),
				fx("SADD", f.key("set"), members...),
				fx("HSET", f.key("h"), "f", "40"),
				fx("HINCRBY", f.key("h"), "f", "2"),
				fx("SET", f.key("s"), "v", "PX", "100000"),
				fx("INCRBY", f.key("neg"), "-9223372036854775808"),
				fx("ZADD", f.key("z"), "0", "a", "-0.0e5", "b", "+inf", "c", "1e-300", "e", "1e+06", "f",
					"0."+strings.Repeat("0", 3<<20), "g", "-0."+strings.Repeat("0", 3<<20)+"e5", "h"), // zeros of megabytes
				fx("XADD", f.key("x"), "*", "f", "last"), // the stream's last ID
			}
			if _, err := f.checkpoint(store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce, Commit: "c", Effects: effects}); err != nil {
				t.Fatal(err)
			}
			if v, _ := f.rdb.Get(f.ctx, f.key("big")).Result(); v != "9223372036854775807" {
				t.Errorf("big = %s", v)
			}
			if n, _ := f.rdb.SCard(f.ctx, f.key("set")).Result(); n != 9000 {
				t.Errorf("set has %d members, want 9000", n)
			}
			if v, _ := f.rdb.HGet(f.ctx, f.key("h"), "f").Result(); v != "42" {
				t.Errorf("h.f = %s, want 42", v)
			}
			if v, _ := f.rdb.Get(f.ctx, f.key("neg")).Result(); v != "-9223372036854775808" {
				t.Errorf("neg = %s", v)
			}
			if n, _ := f.rdb.ZCard(f.ctx, f.key("z")).Result(); n != 7 {
				t.Errorf("z has %d members, want 7 (zero, signed zero, inf, a tiny score, 1e+06, two long zeros)", n)
			}
			if last, _ := f.rdb.XRevRangeN(f.ctx, f.key("x"), "+", "-", 1).Result(); len(last) != 1 || last[0].ID != maxID {
				t.Errorf("x ends with %v, want %s", last, maxID)
			}
		})
	}
}

// TestAckBatchIsolation: acks of unrelated jobs share one script call; a
// completion whose effects cannot apply fails its own job only (a retry,
// reason "effect", none of its effects written), and every other job of
// the call ends where its own outcome says, indexed, with counters equal
// to the jobs counted.
func TestAckBatchIsolation(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		for _, bad := range []string{"script", "go"} {
			t.Run(b.name+"/"+bad, func(t *testing.T) {
				f := newFixture(t, b)
				f.rdb.RPush(f.ctx, f.key("list"), "x")
				f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
				res := f.claim(3, "w")
				if len(res.Jobs) != 3 {
					t.Fatalf("claimed %d", len(res.Jobs))
				}
				byID := map[string]*store.Job{}
				for _, j := range res.Jobs {
					byID[j.Local] = j
				}
				badFx := fx("INCRBY", f.key("list"), "1") // the key holds a list
				if bad == "go" {
					badFx = fx("ZADD", f.key("z"), "NaN", "m")
				}
				acks := []store.Ack{
					{Lease: lease(byID["a"]), Code: store.CodeFree},
					{Lease: lease(byID["b"]), Code: store.CodeOK, Commit: "b:#complete", Delay: 1000,
						Effects: []sluicetype.Effect{fx("INCRBY", f.key("bal"), "100"), badFx}},
					{Lease: lease(byID["c"]), Code: store.CodeOK, Commit: "c:#complete", Effects: []sluicetype.Effect{fx("INCRBY", f.key("bal2"), "5")}},
				}
				out, _, err := f.st.Ack(f.ctx, f.p, acks)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{out[0].State, out[1].State, out[2].State}
				if strings.Join(got, " ") != "available retryable completed" {
					t.Fatalf("states %v, want available retryable completed", got)
				}
				if n := exists(t, f, f.key("bal")); n != 0 {
					t.Error("the failed completion's first effect was written")
				}
				if v, _ := f.rdb.Get(f.ctx, f.key("bal2")).Result(); v != "5" {
					t.Errorf("c's effect: %q, want 5", v)
				}
				if ids := f.availableOrder(0); len(ids) != 1 || ids[0] != "a" {
					t.Errorf("available list %v, want [a]", ids)
				}
				if _, ok := f.score(f.p.Terminal("completed"), "c"); !ok {
					t.Error("c is in no retention set")
				}
				if _, ok := f.due("b"); !ok {
					t.Error("b is not scheduled for its retry")
				}
				_, recs := f.get("b")
				if len(recs) == 0 || recs[0].Class != "effect" {
					t.Errorf("b's errors %+v, want an effect error first", recs)
				}
				stats, _ := f.rdb.HGetAll(f.ctx, f.p.Stats()).Result()
				want := map[string]string{"available": "1", "retryable": "1", "completed": "1", "running": "0"}
				for k, v := range want {
					if stats[k] != v {
						t.Errorf("stats %s = %q, want %s (all: %v)", k, stats[k], v, stats)
					}
				}
			})
		}
	}
}

// TestScoreOKAsRedis: lua/lib_effects.lua's score_ok, reached without
// Go's check, takes exactly the ZADD scores Redis takes, on each backend
// (gopher-lua reads numbers apart from Redis's Lua), but for hex scores
// on miniredis, which it refuses.
func TestScoreOKAsRedis(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			n := 0
			try := func(v string, takes bool) {
				n++ // a step of its own per score
				c := store.Checkpoint{Lease: lease(j), Field: "s" + strconv.Itoa(n), Record: []byte("r"), Mode: store.ModeOnce,
					Commit: "c" + strconv.Itoa(n), Effects: []sluicetype.Effect{fx("ZADD", f.key("z"), v, "m")}}
				status, detail, err := f.st.CheckpointUnchecked(f.ctx, f.p, c)
				if err != nil {
					t.Fatalf("score %q: %v", v, err)
				}
				if took := status != "effect_error"; took != takes {
					t.Errorf("score %q: %s %v; Redis takes it: %v", v, status, detail, takes)
				}
			}
			for _, v := range store.ScoresRedisTakes {
				// under gopher-lua (miniredis) score_ok refuses every hex
				// score: its tonumber and miniredis's ZADD read some of
				// them apart from Redis (lua/lib_effects.lua)
				hexOnMiniredis := b.name == "miniredis" && strings.Contains(strings.ToLower(v), "0x")
				try(v, !hexOnMiniredis)
			}
			for _, v := range store.ScoresRedisRefuses {
				try(v, false)
			}
		})
	}
}

// TestEffectsNeedACommitName: effects relay under their commit's name, so a
// commit with effects and no name is refused and writes nothing, while a
// commit without effects needs none.
func TestEffectsNeedACommitName(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			j := f.runningJob()
			c := store.Checkpoint{Lease: lease(j), Field: "s", Record: []byte("r"), Mode: store.ModeOnce,
				Effects: []sluicetype.Effect{fx("INCRBY", f.key("bal"), "1")}}
			if _, err := f.checkpoint(c); !errors.Is(err, store.ErrInvalidEffect) {
				t.Fatalf("checkpoint with effects and no name: %v, want ErrInvalidEffect", err)
			}
			if n := exists(t, f, f.key("bal"), f.p.Steps("job")); n != 0 {
				t.Fatalf("a refused commit wrote %d keys", n)
			}
			c.Effects = nil
			if _, err := f.checkpoint(c); err != nil {
				t.Fatalf("checkpoint without effects or name: %v", err)
			}
		})
	}
}

// TestCheckpointTwiceInOneCall: the same commit twice in one call of
// checkpoints (a step's effects, a cursor's record) applies once; both
// answer as written. The ack's twin (TestAckSameAttemptTwiceInOneCall)
// once applied effects twice: each batched call that writes a job's data
// is checked for it.
func TestCheckpointTwiceInOneCall(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "x"})
			held := f.claimLeases(1, "w")
			bal := f.key("bal")
			once := store.Checkpoint{Lease: held["x"], Field: "charge", Record: []byte("r1"), Mode: store.ModeOnce,
				Commit: "c1", Effects: []sluicetype.Effect{fx("INCRBY", bal, "100")}}
			cursor := store.Checkpoint{Lease: held["x"], Field: "cursor:page", Record: []byte("p1"), Mode: store.ModeCursor,
				Commit: "c2", Effects: []sluicetype.Effect{fx("INCRBY", bal, "10")}}
			rs, _ := f.st.Checkpoints(f.ctx, f.p, []store.Checkpoint{once, cursor, once, cursor})
			for i, r := range rs {
				if r.Err != nil {
					t.Fatalf("checkpoint %d: %v", i, r.Err)
				}
			}
			if v := f.rdb.Get(f.ctx, bal).Val(); v != "110" {
				t.Fatalf("the commits' effects applied to %s, want once each (110)", v)
			}
		})
	}
}
