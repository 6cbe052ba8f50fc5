package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
)

// TestRetention: finished jobs stay for their retention and are then
// deleted with every key they own.
func TestRetention(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			// "done" has a payload long enough for a key of its own
			f.enqueue(store.NewJob{Local: "done", Payload: make([]byte, 2000)}, store.NewJob{Local: "dead", MaxAttempts: 1})
			for _, j := range f.claim(2, "w").Jobs {
				code := store.CodeOK
				if j.Local == "dead" {
					code = store.CodeRetry
				}
				f.ack(j, store.Ack{Code: code, Message: "x", Reason: "error"})
			}
			owned := func(id string) []string { return []string{f.p.Job(id), f.p.Body(id), f.p.Errors(id), f.p.Steps(id)} }
			if err := f.rdb.HSet(f.ctx, f.p.Steps("done"), "step", "x").Err(); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(retainCompleted - time.Millisecond)
			if n, err := f.sweep(10); err != nil || n != 0 {
				t.Fatalf("sweep before retention = %d, %v", n, err)
			}
			f.clk.Advance(time.Millisecond)
			if n, err := f.sweep(10); err != nil || n != 1 {
				t.Fatalf("sweep at retention = %d, %v", n, err)
			}
			if n := exists(t, f, owned("done")...); n != 0 {
				t.Fatalf("%d keys of the completed job left", n)
			}
			if _, _, err := f.st.Get(f.ctx, keys.Ref{Partition: f.p, Local: "done"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("get deleted job: %v", err)
			}
			if n := exists(t, f, owned("dead")...); n != 2 {
				t.Fatalf("archived job lost keys early: %d of 2 left", n)
			}
			f.clk.Advance(retainArchived)
			if n, err := f.sweep(10); err != nil || n != 1 || exists(t, f, owned("dead")...) != 0 {
				t.Fatalf("sweep of archived = %d, %v", n, err)
			}
			for _, z := range []string{"completed", "archived"} {
				if n, _ := f.rdb.ZCard(f.ctx, f.p.Terminal(z)).Result(); n != 0 {
					t.Fatalf("%s set still has %d entries", z, n)
				}
			}
		})
	}
}

// TestDiscardCompleted: with a negative retention a completed job is gone
// at once.
func TestDiscardCompleted(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := discarding(t, b)
			f.enqueue(store.NewJob{Local: "j", Payload: make([]byte, 2000)}) // a body key of its own
			if n := exists(t, f, f.p.Body("j")); n != 1 {
				t.Fatalf("the 2,000-byte payload has no key of its own")
			}
			if r := f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK}); r.State != "completed" {
				t.Fatalf("ack = %+v", r)
			}
			if n := exists(t, f, f.p.Job("j"), f.p.Body("j"), f.p.Errors("j")); n != 0 {
				t.Fatalf("%d keys left", n)
			}
			if got, _ := b.rdb.HGetAll(f.ctx, f.p.Stats()).Result(); got["completed"] != "" && got["completed"] != "0" {
				t.Fatalf("stats %v", got)
			}
		})
	}
}

// TestDiscardCompletedBatch: the plain jobs completed by one ack are all
// gone with their body keys, and so is a job with an error on record
// (deleted with every key it owns); a stale completion in the same call
// leaves its job running.
func TestDiscardCompletedBatch(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := discarding(t, b)
			ids := []string{"a", "b", "c", "d", "e", "failed-once"}
			for _, id := range ids {
				f.enqueue(store.NewJob{Local: id, Payload: make([]byte, 900+len(id))}) // body keys of their own
			}
			first := f.claimOne("w")
			if first.Local != "a" {
				t.Fatalf("claimed %s first", first.Local)
			}
			f.clk.Advance(time.Second)
			res := f.claim(10, "w")
			if len(res.Jobs) != len(ids)-1 {
				t.Fatalf("claimed %d more, want %d", len(res.Jobs), len(ids)-1)
			}
			var acks []store.Ack
			for _, j := range res.Jobs {
				if j.Local == "failed-once" {
					if r := f.ack(j, store.Ack{Code: store.CodeRetry, Message: "boom"}); r.State != "retryable" {
						t.Fatalf("retry = %+v", r)
					}
					f.clk.Advance(time.Millisecond) // due again: its retry has no delay; the others' leases hold
					j = f.claimOne("w")
				}
				acks = append(acks, store.Ack{Lease: lease(j), Code: store.CodeOK})
			}
			stale := lease(first)
			stale.Fence++ // not this attempt's fence: nothing written for it
			acks = append(acks, store.Ack{Lease: stale, Code: store.CodeOK})
			got, _, err := f.st.Ack(f.ctx, f.p, acks)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got[:len(got)-1] {
				if r.State != "completed" || r.Err != nil {
					t.Fatalf("ack of %s = %+v", acks[i].Local, r)
				}
			}
			if r := got[len(got)-1]; r.Err == nil {
				t.Fatalf("stale ack = %+v, want refused", r)
			}
			for _, id := range ids[1:] {
				if n := exists(t, f, f.p.Job(id), f.p.Body(id), f.p.Errors(id)); n != 0 {
					t.Errorf("job %s: %d keys left", id, n)
				}
			}
			if j, _ := f.get("a"); j.State != "running" || exists(t, f, f.p.Body("a")) != 1 {
				t.Errorf("job a, whose ack was stale: %+v, want running with its body", j)
			}
			if got := f.stats(); got["running"] != 1 || got["available"] != 0 {
				t.Errorf("stats %v, want 1 running", got)
			}
		})
	}
}

// discarding is a fixture whose store deletes completed jobs at once.
func discarding(t *testing.T, b backend) *fixture {
	clk := &testClock{now: epoch}
	st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1, RetainArchived: time.Hour,
		RetainCancelled: time.Hour, CrashLimit: 3, Now: clk.Now})
	return &fixture{t: t, ctx: t.Context(), rdb: b.rdb, st: st, clk: clk, p: st.Partition("q", 0)}
}

func exists(t *testing.T, f *fixture, ks ...string) int {
	t.Helper()
	n := 0
	for _, k := range ks { // one by one: EXISTS of several keys must share a slot
		c, err := f.rdb.Exists(f.ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += int(c)
	}
	return n
}

// TestMalformedJobs: a job hash that is not a job (wrong type, missing or
// non-numeric fields) is archived as malformed at claim: no script error,
// no crash loop, the data kept, other jobs unaffected.
func TestMalformedJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "string"}, store.NewJob{Local: "nokind"}, store.NewJob{Local: "badfence"}, store.NewJob{Local: "good"})
			must := func(err error) {
				if err != nil {
					t.Fatal(err)
				}
			}
			must(f.rdb.Del(f.ctx, f.p.Job("string")).Err())
			must(f.rdb.Set(f.ctx, f.p.Job("string"), "garbage", 0).Err())
			must(f.rdb.HDel(f.ctx, f.p.Job("nokind"), keys.FieldKind).Err())
			must(f.rdb.HSet(f.ctx, f.p.Job("badfence"), keys.FieldFence, "x").Err())
			res := f.claim(10, "w")
			if len(res.Jobs) != 1 || res.Jobs[0].Local != "good" {
				t.Fatalf("claimed %+v", res.Jobs)
			}
			want := []store.Parked{{"string", "malformed"}, {"nokind", "malformed"}, {"badfence", "malformed"}}
			if diff := cmp.Diff(want, res.Parked); diff != "" {
				t.Fatalf("parked (-want +got):\n%s", diff)
			}
			for _, id := range []string{"string", "badfence"} {
				if s, _ := f.rdb.HGet(f.ctx, f.p.Job(id), keys.FieldState).Result(); store.StateName(s) != "archived" {
					t.Fatalf("%s state %q", id, s)
				}
			}
			if v, err := f.rdb.Get(f.ctx, f.p.Aside(keys.AsideJob, "string", 1)).Result(); err != nil || v != "garbage" {
				t.Fatalf("corrupt value not kept: %q %v", v, err)
			}
			// the hash put in its place says when it was set aside
			if j, _ := f.get("string"); !j.Created.Equal(f.clk.Now().Truncate(time.Millisecond)) {
				t.Errorf("set-aside job created %v, want the claim's time %v", j.Created, f.clk.Now())
			}
			if _, _, err := f.st.Get(f.ctx, keys.Ref{Partition: f.p, Local: "nokind"}); !errors.Is(err, store.ErrMalformed) {
				t.Fatalf("get of a job without kind: %v", err)
			}
		})
	}
}

// TestScriptFlush: after SCRIPT FLUSH the scripts load again (NOSCRIPT
// fallback to EVAL) and work continues.
func TestScriptFlush(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		if b.name == "miniredis" {
			continue // miniredis is covered by every other test; this is about a real server's cache
		}
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a"})
			j := f.claimOne("w")
			flush := func() {
				if cc, ok := f.rdb.(*redis.ClusterClient); ok {
					if err := cc.ForEachShard(f.ctx, func(ctx context.Context, c *redis.Client) error {
						return c.ScriptFlush(ctx).Err()
					}); err != nil {
						t.Fatal(err)
					}
					return
				}
				if err := f.rdb.ScriptFlush(f.ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			flush()
			if r := f.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil {
				t.Fatal(r.Err)
			}
			flush()
			f.enqueue(store.NewJob{Local: "b"})
			flush()
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
		})
	}
}

// TestKeysAgree: the keys the Lua prelude writes are the ones Go's key
// builder names.
func TestKeysAgree(t *testing.T) {
	t.Parallel()
	b := backends(t)[1]
	f := newFixture(t, b)
	f.enqueue(store.NewJob{Local: "j"})
	f.ack(f.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "x", Delay: time.Hour})
	var got []string
	calls := 0 // call records (lua/lib_replay.lua), under Go's builder
	iter := f.rdb.Scan(f.ctx, 0, f.p.Prefix()+"*", 1000).Iterator()
	for iter.Next(f.ctx) {
		if strings.HasPrefix(iter.Val(), f.p.Call("")) {
			calls++
			continue
		}
		got = append(got, iter.Val())
	}
	if calls != 3 {
		t.Errorf("%d call records, want 3 (enqueue, claim, ack)", calls)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	// due in an hour: a bucket of later jobs (store.LaterBucketMS)
	bucket := strconv.FormatInt(f.clk.Now().Add(time.Hour).UnixMilli()/store.LaterBucketMS, 10)
	// and the running index, which keeps its anchor (keys.RunAnchor)
	want := []string{f.p.Job("j"), f.p.Errors("j"), f.p.Later(), f.p.LaterBucket(bucket), f.p.Stats(), f.p.Priorities(),
		f.p.Running()}
	less := func(a, b string) bool { return a < b }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Fatalf("keys (-go builder +written by lua):\n%s", diff)
	}
}

// TestMaintainOnePass: one Maintain call reclaims an expired lease,
// promotes a due job and deletes a finished job past its retention, and a
// limit of 0 skips its part.
func TestMaintainOnePass(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "done"})
			f.ack(f.claimOne("w"), store.Ack{Code: store.CodeOK})
			f.enqueue(store.NewJob{Local: "held"})
			f.claimOne("gone")
			f.enqueue(store.NewJob{Local: "due", Delay: time.Minute})
			f.clk.Advance(retainCompleted)
			if m, err := f.st.Maintain(f.ctx, f.p, 0, 0, 0); err != nil || len(m.Reaped)+m.Promoted+m.Deleted != 0 {
				t.Fatalf("maintain with no limits = %+v, %v; want nothing done", m, err)
			}
			m, err := f.st.Maintain(f.ctx, f.p, 10, 10, 10)
			want := store.Maintenance{Reaped: []store.Reaped{{Local: "held", State: "retryable", Holder: "gone"}}, Promoted: 1, Deleted: 1}
			if err != nil || !cmp.Equal(m, want) {
				t.Fatalf("maintain = %+v, %v; want %+v", m, err, want)
			}
			for id, state := range map[string]string{"held": "retryable", "due": "available"} {
				if j, _ := f.get(id); j.State != state {
					t.Errorf("%s is %s, want %s", id, j.State, state)
				}
			}
			if _, _, err := f.st.Get(f.ctx, keys.Ref{Partition: f.p, Local: "done"}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the completed job past its retention: %v, want it deleted", err)
			}
		})
	}
}
