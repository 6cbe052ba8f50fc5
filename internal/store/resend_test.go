package store_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

// lossy is a fixture whose store reaches a real redis-server through the
// chaos proxy, which can drop the reply of a script call after Redis ran
// it (go-redis then sends the call again) or deliver the call twice.
type lossy struct {
	*fixture
	proxy *chaos.Proxy
}

func newLossy(t *testing.T) *lossy {
	t.Helper()
	px, err := chaos.NewProxy(env.Server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: px.Addr()})
	// Loaded first, so that the faulted call is the script's run, not an
	// EVALSHA answered NOSCRIPT.
	for _, sc := range []*lua.Script{lua.Enqueue, lua.Claim, lua.Ack, lua.Step, lua.Cancel, lua.Delete, lua.Redrive, lua.Maintain, lua.Signal} {
		if err := sc.Load(context.Background(), rdb); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		rdb.Close()
		px.Close()
	})
	return &lossy{fixture: newFixture(t, backend{"lossy", rdb}), proxy: px}
}

// fault arms kind for the next script call and returns a check that it
// fired.
func (l *lossy) fault(kind chaos.FaultKind) func() {
	l.t.Helper()
	d0, u0 := l.proxy.Fired()
	l.proxy.Inject(kind, 1, chaos.Commands(lua.Commands...))
	return func() {
		l.t.Helper()
		d, u := l.proxy.Fired()
		if d+u != d0+u0+1 {
			l.t.Fatalf("the %v fault did not fire", kind)
		}
	}
}

// TestResend: every mutating script, delivered twice (by go-redis after a
// lost reply, or twice in a row), has the effect of one delivery and
// answers the caller what the first did. Each case names the defect of a
// script that was not safe to receive twice.
func TestResend(t *testing.T) {
	t.Parallel()
	type tc struct {
		name string
		run  func(t *testing.T, l *lossy, fire func() func())
	}
	cases := []tc{
		{"enqueue without an ID makes one job", func(t *testing.T, l *lossy, fire func() func()) {
			check := fire()
			res, err := l.st.Enqueue(l.ctx, l.p, []store.NewJob{{Local: l.st.NewLocal(), Generated: true, Kind: "k", Payload: []byte("x"), MaxAttempts: 3}})
			check()
			if err != nil || res[0].Status != store.Added || res[0].Local != "" {
				t.Fatalf("enqueue: %+v %v", res, err)
			}
			l.wantStats(map[string]string{"available": "1"})
		}},
		{"claim leases only what it answers", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"}, store.NewJob{Local: "c"})
			check := fire()
			res := l.claim(2, "w")
			check()
			if len(res.Jobs) != 2 {
				t.Fatalf("claimed %d, want 2", len(res.Jobs))
			}
			if n := runningJobs(t, l.ctx, l.rdb, l.p); n != 2 {
				t.Fatalf("%d jobs running, want the 2 answered", n)
			}
			// a re-sent claim reads the jobs after the claim, the first run
			// before it: the jobs answered are the same either way
			for _, j := range res.Jobs {
				if j.Kind != "k" || string(j.Payload) != "payload-"+j.Local || j.Fence != 1 || j.State != "running" ||
					!j.LeaseStart.IsZero() || j.Malformed != nil {
					t.Fatalf("claimed job %+v; want kind k, its payload, fence 1, running, no lease start", j)
				}
			}
			for _, j := range res.Jobs {
				if r := l.ack(j, store.Ack{Code: store.CodeOK}); r.Err != nil || r.State != "completed" {
					t.Fatalf("ack of a claimed job: %+v", r)
				}
			}
		}},
		{"ack that archives answers archived", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a", MaxAttempts: 1})
			j := l.claimOne("w")
			check := fire()
			r := l.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			check()
			if r.Err != nil || r.State != "archived" {
				t.Fatalf("ack: %+v, want archived (OnDeath is called on it)", r)
			}
		}},
		{"completion effect applies once", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			j := l.claimOne("w")
			check := fire()
			r := l.ack(j, store.Ack{Code: store.CodeOK, Commit: "a:#complete", Effects: []sluicetype.Effect{fx("INCRBY", l.key("bal"), "100")}})
			check()
			if r.Err != nil || r.State != "completed" {
				t.Fatalf("ack: %+v", r)
			}
			l.wantValue("bal", "100")
		}},
		{"step checkpoint answers ok and applies once", func(t *testing.T, l *lossy, fire func() func()) {
			l.commitOnce(fire, store.ModeOnce, "s", "bal")
		}},
		{"cursor advance applies once", func(t *testing.T, l *lossy, fire func() func()) {
			l.commitOnce(fire, store.ModeCursor, "cursor:c", "rows")
		}},
		{"cancel answers its first run", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			check := fire()
			prev, err := l.st.Cancel(l.ctx, keys.Ref{Partition: l.p, Local: "a"}, retainCancelled)
			check()
			if err != nil || prev != "available" {
				t.Fatalf("cancel: %q %v", prev, err)
			}
		}},
		{"delete answers its first run", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			check := fire()
			prev, err := l.st.Delete(l.ctx, keys.Ref{Partition: l.p, Local: "a"})
			check()
			if err != nil || prev != "available" {
				t.Fatalf("delete: %q %v", prev, err)
			}
		}},
		{"redrive answers its first run", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a", MaxAttempts: 1})
			l.ack(l.claimOne("w"), store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"})
			check := fire()
			errs, err := l.st.RedriveIDs(l.ctx, l.p, store.ActionRedrive, []string{"a"})
			check()
			if err != nil || errs[0] != nil {
				t.Fatalf("redrive: %v %v", errs, err)
			}
			l.wantStats(map[string]string{"available": "1", "archived": "0"})
		}},
		{"release hands a hold over once", func(t *testing.T, l *lossy, fire func() func()) {
			l.holdHandOver(fire, func() error {
				errs, err := l.st.RedriveIDs(l.ctx, l.p, store.ActionRelease, []string{"a"})
				if err == nil {
					err = errs[0]
				}
				return err
			})
		}},
		{"delete hands a hold over once", func(t *testing.T, l *lossy, fire func() func()) {
			l.holdHandOver(fire, func() error {
				_, err := l.st.Delete(l.ctx, keys.Ref{Partition: l.p, Local: "a"})
				return err
			})
		}},
		{"signal is kept once and wakes its job", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			l.suspend(l.claimOne("w"), &sluicetype.SuspendedError{Signals: []string{"go"}})
			check := fire()
			state, err := l.signal("a", "go", "x")
			check()
			if err != nil || state != "available" {
				t.Fatalf("signal: %q %v", state, err)
			}
			l.wantStats(map[string]string{"available": "1", "scheduled": "0"})
			if n, _ := l.rdb.HLen(l.ctx, l.p.Steps("a")).Result(); n != 1 {
				t.Fatalf("%d fields kept, want the one signal", n)
			}
		}},
		{"suspend answers its first run", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			j := l.claimOne("w")
			check := fire()
			state := l.suspend(j, &sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "t", After: time.Minute}}})
			check()
			if state != "scheduled" {
				t.Fatalf("suspend: %q", state)
			}
			l.wantStats(map[string]string{"running": "0", "scheduled": "1"})
		}},
		{"reap reports what it reaped", func(t *testing.T, l *lossy, fire func() func()) {
			l.enqueue(store.NewJob{Local: "a"})
			l.claimOne("w")
			l.clk.Advance(time.Hour)
			check := fire()
			m, err := l.st.Maintain(l.ctx, l.p, 10, 0, 0)
			check()
			if err != nil || len(m.Reaped) != 1 {
				t.Fatalf("maintain: %+v %v, want the job reaped once and reported", m, err)
			}
			if j, _ := l.get("a"); j.CrashAttempt != 1 {
				t.Fatalf("crash_attempt %d, want 1", j.CrashAttempt)
			}
		}},
	}
	for _, c := range cases {
		for _, kind := range []chaos.FaultKind{chaos.DropReply, chaos.Duplicate} {
			t.Run(c.name+"/"+kind.String(), func(t *testing.T) {
				t.Parallel()
				l := newLossy(t)
				c.run(t, l, func() func() { return l.fault(kind) })
			})
		}
	}
}

// holdHandOver quarantines a, then b and c, of one fingerprint (a holds
// it, b and c wait to take it over), adds d held by a, and frees a by
// free (its release or deletion) under the fault fire arms: the caller
// is answered the first run's success, and the hold goes to b alone, d
// held by it, then to c once b is released, whether the call ran once or
// twice.
func (l *lossy) holdHandOver(fire func() func(), free func() error) {
	l.t.Helper()
	l.enqueue(store.NewJob{Local: "a", Hold: "fp"}, store.NewJob{Local: "b", Hold: "fp", Delay: 10 * time.Hour},
		store.NewJob{Local: "c", Hold: "fp", Delay: 20 * time.Hour})
	l.crashOut("a")
	l.clk.Advance(10 * time.Hour)
	l.crashOut("b")
	l.clk.Advance(10 * time.Hour)
	l.crashOut("c")
	res, err := l.st.Enqueue(l.ctx, l.p, []store.NewJob{{Local: "d", Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Hold: "fp"}})
	if err != nil || res[0].HeldBy != "a" {
		l.t.Fatalf("enqueue d: %+v %v, want held by a", res, err)
	}
	check := fire()
	if err := free(); err != nil {
		l.t.Fatalf("freeing a: %v", err)
	}
	check()
	if j, _ := l.get("d"); j.State != "scheduled" || j.HeldBy != "b" {
		l.t.Fatalf("d is %s held by %q, want held by b", j.State, j.HeldBy)
	}
	if errs, err := l.st.RedriveIDs(l.ctx, l.p, store.ActionRelease, []string{"b"}); err != nil || errs[0] != nil {
		l.t.Fatalf("release b: %v %v", errs, err)
	}
	if j, _ := l.get("d"); j.State != "scheduled" || j.HeldBy != "c" {
		l.t.Fatalf("once b is released d is %s held by %q, want held by c", j.State, j.HeldBy)
	}
}

// TestResendLate: a call delivered again after its record expired (a
// retry much later than go-redis makes) still applies nothing twice; an
// ack answers the job's state rather than 'stale', whichever way the
// attempt ended: a suspension too, which leaves the lease's other fields.
func TestResendLate(t *testing.T) {
	t.Parallel()
	spec, err := store.SuspendSpec(&sluicetype.SuspendedError{Timers: []sluicetype.Timer{{Name: "t", After: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := []struct {
		name, want string
		ack        store.Ack
		errors     int
	}{
		{"archived", "archived", store.Ack{Code: store.CodeRetry, Reason: "error", Message: "boom"}, 1},
		{"suspended", "scheduled", store.Ack{Code: store.CodeSuspend, Data: []byte(spec)}, 0},
	}
	for _, b := range backends(t) {
		for _, o := range outcomes {
			t.Run(b.name+"/"+o.name, func(t *testing.T) {
				f := newFixture(t, b)
				f.enqueue(store.NewJob{Local: "a", MaxAttempts: 1})
				j := f.claimOne("w")
				a := o.ack
				a.Lease = lease(j)
				if r := f.ack(j, a); r.Err != nil || r.State != o.want {
					t.Fatalf("ack: %+v", r)
				}
				iter := f.rdb.Scan(f.ctx, 0, f.p.Call("")+"*", 100).Iterator()
				for iter.Next(f.ctx) {
					f.rdb.Del(f.ctx, iter.Val())
				}
				if r := f.ack(j, a); r.Err != nil || r.State != o.want {
					t.Fatalf("late re-sent ack: %+v, want %s", r, o.want)
				}
				if _, recs := f.get("a"); len(recs) != o.errors {
					t.Fatalf("%d errors recorded, want %d", len(recs), o.errors)
				}
			})
		}
	}
}

// commitOnce commits field (mode) with an INCRBY of key under the armed
// fault: the commit answers ok (a healthy attempt keeps its lease) and
// its effect applies once.
func (l *lossy) commitOnce(fire func() func(), mode, field, key string) {
	l.t.Helper()
	l.enqueue(store.NewJob{Local: "a"})
	j := l.claimOne("w")
	check := fire()
	_, err := l.checkpoint(store.Checkpoint{Lease: lease(j), Field: field, Record: []byte("1"), Mode: mode, Commit: "a@1:" + field,
		Effects: []sluicetype.Effect{fx("INCRBY", l.key(key), "100")}})
	check()
	if err != nil {
		l.t.Fatalf("%s commit: %v", mode, err)
	}
	l.wantValue(key, "100")
}

func (f *fixture) wantStats(want map[string]string) {
	f.t.Helper()
	stats, err := f.rdb.HGetAll(f.ctx, f.p.Stats()).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range want {
		if got := stats[k]; got != v && (v != "0" || got != "") {
			f.t.Errorf("stats %s = %q, want %s (all %v)", k, got, v, stats)
		}
	}
}

func (f *fixture) wantValue(key, want string) {
	f.t.Helper()
	got, err := f.rdb.Get(f.ctx, f.key(key)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		f.t.Fatal(err)
	}
	if got != want {
		f.t.Errorf("%s = %q, want %q", key, got, want)
	}
}

// TestLateAckAfterReapIsStale: an attempt the reaper ended is over, not
// acked: its late ack is stale (its death, say, is not reported), though
// a re-sent ack of an attempt that did end by its ack answers that.
func TestLateAckAfterReapIsStale(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			f.enqueue(store.NewJob{Local: "a", MaxAttempts: 1})
			j := f.claimOne("w")
			f.clk.Advance(time.Hour)
			if _, err := f.reap(10); err != nil {
				t.Fatal(err)
			}
			if r := f.ack(j, store.Ack{Code: store.CodeRetry, Reason: "error", Message: "late"}); !errors.Is(r.Err, store.ErrStale) {
				t.Fatalf("late ack after the reaper: %+v, want ErrStale", r)
			}
		})
	}
}

// TestRecordAnswersRepeat: on every backend (a redis-server's record is
// packed by cmsgpack, miniredis's by the Lua codec of lib_replay.lua), an
// ack repeated under the same call ID answers from its record: a batch
// whose completion deleted its job (completed jobs discarded), which a
// second run would find gone and call stale, answers completed again, and
// its retry is not charged twice.
func TestRecordAnswersRepeat(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := store.New(b.rdb, store.Config{NS: redistest.NewNamespace(t), RetainCompleted: -1,
				RetainArchived: retainArchived, RetainCancelled: retainCancelled, CrashLimit: 3})
			f := &fixture{t: t, ctx: context.Background(), rdb: b.rdb, st: st, p: st.Partition("q", 0)}
			f.enqueue(store.NewJob{Local: "a"}, store.NewJob{Local: "b"})
			res := f.claim(2, "w")
			if len(res.Jobs) != 2 {
				t.Fatalf("claimed %d jobs, want 2", len(res.Jobs))
			}
			acks := []store.Ack{
				{Lease: lease(res.Jobs[0]), Code: store.CodeOK},
				{Lease: lease(res.Jobs[1]), Code: store.CodeRetry, Reason: "error", Message: "boom"},
			}
			for round := range 2 {
				got, outboxed, err := st.Ack(f.ctx, f.p, acks)
				if err != nil || outboxed != 0 || len(got) != 2 || got[0].State != "completed" || got[1].State != "retryable" {
					t.Fatalf("ack %d: %+v, %d outboxed, %v; want completed, retryable", round+1, got, outboxed, err)
				}
			}
			if n, err := b.rdb.Exists(f.ctx, f.p.Job(res.Jobs[0].Local)).Result(); err != nil || n != 0 {
				t.Errorf("completed job kept (%d, %v); want it deleted", n, err)
			}
			if a, _ := b.rdb.HGet(f.ctx, f.p.Job(res.Jobs[1].Local), keys.FieldAttempt).Int(); a != 1 {
				t.Errorf("retried job's attempt = %d; want 1 (charged once)", a)
			}
			// the records' codec: cmsgpack on a redis-server, the Lua
			// codec on miniredis (a list 't<count>:...', a number 'n<n>:')
			want := "cmsgpack"
			if b.name == "miniredis" {
				want = "lua"
			}
			iter := b.rdb.Scan(f.ctx, 0, f.p.Call("*"), 100).Iterator()
			records := 0
			for iter.Next(f.ctx) {
				records++
				rec, err := b.rdb.Get(f.ctx, iter.Val()).Result()
				if err != nil || rec == "" {
					t.Fatalf("record %s: %q, %v", iter.Val(), rec, err)
				}
				got := "cmsgpack"
				if luaRecord.MatchString(rec) {
					got = "lua"
				}
				if got != want {
					t.Errorf("record %s starts %q: packed by %s, want %s", iter.Val(), rec[:1], got, want)
				}
			}
			if records == 0 {
				t.Errorf("no call records found (err %v)", iter.Err())
			}
		})
	}
}

// luaRecord is how lib_replay.lua's Lua codec starts a record: a list, a
// string or a number with its count, length or value, or false.
var luaRecord = regexp.MustCompile(`^([tsn]-?[0-9]+:|f$)`)

// TestCallRecordOutlivesResends: a call's record on Redis lasts as long
// as its client may re-send the call (store's callKeep: over two minutes
// with go-redis's defaults), not a fixed minute.
func TestCallRecordOutlivesResends(t *testing.T) {
	t.Parallel()
	c := env.Server.Client()
	t.Cleanup(func() { c.Close() })
	f := newFixture(t, backend{"redis", c})
	f.enqueue(store.NewJob{Local: "a"})
	iter := f.rdb.Scan(f.ctx, 0, f.p.Call("*"), 100).Iterator()
	n := 0
	for iter.Next(f.ctx) {
		n++
		if ttl := f.rdb.PTTL(f.ctx, iter.Val()).Val(); ttl <= 2*time.Minute {
			t.Errorf("record %s kept %s, want over two minutes", iter.Val(), ttl)
		}
	}
	if n == 0 {
		t.Fatalf("no call record")
	}
}

// lateResend is a go-redis hook that runs each enqueue call, moves
// miniredis's clock on by after (TTLs expire), and runs the call again,
// answering the second run: a re-send that reaches Redis late.
type lateResend struct {
	m     *miniredis.Miniredis
	after time.Duration
}

func (h lateResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h lateResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || len(cmd.Args()) < 2 || !lua.Enqueue.Is(cmd.Name(), fmt.Sprint(cmd.Args()[1])) {
			return err
		}
		h.m.FastForward(h.after)
		return next(ctx, cmd)
	}
}

func (h lateResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLateResendOfGeneratedID: an enqueue of a job with a generated ID
// whose re-send reaches Redis 90 s after the first run (go-redis's
// defaults allow over two minutes) is answered from the call's record:
// one job. With records kept a fixed 60 s, the late run found the ID
// taken, and the store added a copy under another ID.
func TestLateResendOfGeneratedID(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	f := newFixture(t, backend{"miniredis", rdb})
	f.enqueue(store.NewJob{Local: "warm"}) // loads the library before the hook
	rdb.AddHook(lateResend{m: m, after: 90 * time.Second})
	local := f.st.NewLocal()
	res, err := f.st.Enqueue(f.ctx, f.p, []store.NewJob{{Local: local, Kind: "k", Payload: []byte("x"), MaxAttempts: 3, Generated: true}})
	if err != nil || res[0].Status != store.Added || res[0].Local != "" {
		t.Fatalf("enqueue: %+v %v, want added under its own ID", res, err)
	}
	if s := f.stats(); s["available"] != 2 {
		t.Fatalf("stats %v: want 2 jobs (warm and this one), each once", s)
	}
}
