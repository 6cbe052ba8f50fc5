package store_test

// TestModel is a randomised model-based test of the store: random
// sequences of operations (model_ops_test.go) run against Redis, and after
// every step Redis is checked against a small in-memory model of what the
// operations must have done, and against the invariants of the data model:
//
//   - every job hash is in exactly the index its state names (sched for
//     scheduled and retryable, run for running, one terminal zset for a
//     finished job, its priority's available list for an available job),
//     with the score the model expects, and no index holds anything else;
//   - the stats hash counts equal the jobs in each state;
//   - each committed effect is applied exactly once: in-slot effect keys
//     equal the sum of the commits that applied, and a relayed (foreign)
//     key plus its entries still waiting in the outbox equals it too;
//   - no job is lost: every job the model knows exists, in the state, with
//     the counters, fence, lease and step checkpoints the model says; a
//     deleted job leaves none of its keys; no job exists the model does
//     not know; an available job's priority list is flagged in the
//     priority mask, so that claims find it.
//
// It runs twice: against the shared redis-server through the chaos proxy,
// which loses replies and delivers requests twice at random (so every
// script call may be re-sent by go-redis or run twice), and against
// miniredis with no faults (and with completed jobs deleted at once and
// crashed jobs available again at once: the other branches of the
// scripts).
//
// Environment:
//
//	SLUICE_MODEL_SEED   the seed (default: from the time); logged
//	SLUICE_MODEL_STEPS  steps per run (default 300, 100 with -short; make
//	                    chaos runs more)
//	SLUICE_MODEL_LOG    how many of the last operations a failure shows
//	                    (default 20)
//
// A failure names the seed, the step and the operations before it. The
// findings it made in the product are reproduced, deterministically, by
// TestModelRegressions.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
	"github.com/sluicehq/sluice/sluicetype"
)

const (
	modelDefaultSteps = 300
	// modelSegment bounds the steps run on one namespace and clock; longer
	// runs start afresh (seed+1, ...) so that the store clock never runs
	// far enough ahead of Redis's (which stamps outbox entries) for the
	// relay to find an entry too old to apply.
	modelSegment = 20000
	modelLease   = 30 * time.Second
	// Retention: archived is shorter than the default so that random clock
	// jumps reach it.
	modelRetainCompleted = time.Hour
	modelRetainArchived  = 6 * time.Hour
	modelRetainCancelled = 2 * time.Hour
	modelCrashLimit      = 3
	// modelMaxSkew is how far the store clock may run ahead of real time:
	// well inside the relay's maximum entry age (store relayMaxAge, 6 days).
	modelMaxSkew = 4 * 24 * time.Hour
	// modelMaxJobs caps the live jobs (enqueues stop above it), which keeps
	// every claim's promotion (PromoteLimit 100) complete.
	modelMaxJobs = 70
	// modelCallerIDs is the size of the pool of caller-chosen job IDs: small,
	// so that IDs are enqueued again (duplicates, conflicts, reuse after
	// deletion).
	modelCallerIDs = 30
	// modelGoneWatch is how many steps a deleted job with a generated ID is
	// still checked absent (deleted caller IDs are checked for ever).
	modelGoneWatch = 50
	modelLogKeep   = 20
)

func TestModel(t *testing.T) {
	t.Parallel()
	seed := envSeed(t, "SLUICE_MODEL_SEED")
	steps := modelDefaultSteps
	if testing.Short() {
		steps = modelDefaultSteps / 3
	}
	steps = envSteps(t, "SLUICE_MODEL_STEPS", steps)
	t.Logf("model: seed %d, %d steps per run; reproduce with SLUICE_MODEL_SEED=%d SLUICE_MODEL_STEPS=%d go test -race -count=1 -run TestModel ./internal/store/",
		seed, steps, seed, steps)
	for _, lossy := range []bool{true, false} {
		name := "miniredis"
		if lossy {
			name = "redis-lossy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for seg, done := 0, 0; done < steps; seg++ {
				n := min(modelSegment, steps-done)
				r := newModelRun(t, seed, seg, lossy)
				r.total = steps
				r.run(n)
				done += n
			}
		})
	}
}

// mjob is the model of one job.
type mjob struct {
	id, kind, payload string
	state             string
	attempt, crash    int
	maxAttempts, prio int
	// score is its score in the index its state names: due time (sched),
	// lease expiry (run), deletion time (terminal), in ms; unused when
	// available.
	score   int64
	lease   string // 'l' on the hash ("" before the first claim)
	fence   int64  // 'f' on the hash
	worker  string
	started int64 // when its last claim leased it (ms)
	// renewed is the number of the last renewal applied to the lease
	// renewedLease (lua/renew.lua's mark): a renewal of that lease
	// numbered no higher moves nothing
	renewed      int64
	renewedLease string
	created      int64 // when it was enqueued (ms): names its commits (commitName)
	// runNowFrom is the due time a run-now took it from (ms): a snooze or
	// retry now and then puts it back there, into the bucket it left
	runNowFrom int64
	steps      map[string]string // step checkpoints: field -> record
}

// model is what Redis must hold.
type model struct {
	jobs map[string]*mjob
	// gone holds deleted jobs (ID -> step of deletion), checked absent.
	gone map[string]int
	// fx is the expected value of every effect key (in-slot and foreign).
	fx map[string]int64
	// calls holds the replies of the ack and checkpoint calls that ran, by
	// the content that names them (store's contentID): the same call
	// sent again is answered from its record (lua/lib_replay.lua).
	calls      map[string][]string
	callsSince time.Time // real time of the oldest record
}

func newModel() *model {
	return &model{jobs: map[string]*mjob{}, gone: map[string]int{}, fx: map[string]int64{}, calls: map[string][]string{}}
}

func (m *model) clone() *model {
	c := newModel()
	for id, j := range m.jobs {
		cj := *j
		cj.steps = make(map[string]string, len(j.steps))
		for k, v := range j.steps {
			cj.steps[k] = v
		}
		c.jobs[id] = &cj
	}
	for k, v := range m.gone {
		c.gone[k] = v
	}
	for k, v := range m.fx {
		c.fx[k] = v
	}
	for k, v := range m.calls {
		c.calls[k] = v
	}
	c.callsSince = m.callsSince
	return c
}

// ids lists the live jobs' IDs, sorted (every random choice iterates in a
// fixed order, so that a seed reproduces a run).
func (m *model) ids() []string {
	return slices.Sorted(maps.Keys(m.jobs))
}

// inState lists the live jobs in one of states, sorted by ID.
func (m *model) inState(states ...string) []*mjob {
	var out []*mjob
	for _, id := range m.ids() {
		if j := m.jobs[id]; slices.Contains(states, j.state) {
			out = append(out, j)
		}
	}
	return out
}

// current reports whether l is the lease a running job holds at now (ms):
// its lease ID and fence, and a lease that has not run out (a stalled
// worker's writes are refused even before a reap).
func (m *model) current(l store.Lease, now int64) bool {
	j := m.jobs[l.Local]
	return j != nil && j.state == "running" && j.lease == l.LeaseID && j.fence == l.Fence && j.score > now
}

// index is the zset a job in state is a member of ("" for available).
func (r *modelRun) index(state string) string {
	switch state {
	case "scheduled", "retryable":
		return r.p.Sched()
	case "running":
		return r.p.Running()
	case "completed", "archived", "quarantined", "cancelled":
		return r.p.Terminal(state)
	}
	return ""
}

var modelStates = []string{"available", "scheduled", "running", "retryable", "completed", "archived", "quarantined", "cancelled"}

var terminalStates = map[string]bool{"completed": true, "archived": true, "quarantined": true, "cancelled": true}

// modelRun is one run: a store on its own namespace, its model, and the
// operations' log.
type modelRun struct {
	t      *testing.T
	ctx    context.Context
	name   string
	seed   uint64
	seg    int
	rng    *rand.Rand // the operations' choices
	chk    *rand.Rand // the checker's samples, apart so they never change the operations
	st     *store.Store
	rdb    redis.UniversalClient // the store's client (through the proxy when lossy)
	direct redis.UniversalClient // the checker's, never faulted
	proxy  *chaos.Proxy
	clk    *testClock
	p      keys.Partition
	m      *model

	retainCompleted int64 // ms; -1: deleted at once
	crashDelay      int64 // ms; 0: a crashed job is available at once
	inKeys          []string
	foreignKeys     []string
	listKey         string

	epoch     time.Time
	highWater int64         // ms: the latest the store clock has been
	lastTick  time.Duration // the last tick that moved the clock on
	total     int           // steps of the whole run (all segments)
	step      int
	nextGen   int
	nextSeq   int
	log       []string
	leases    []store.Lease    // leases handed out, newest last (stale acks pick from them)
	renewals  map[string]int64 // by lease ID, the highest renewal number sent
	lastAck   *ackCall
	lastCkpt  *ckptCall
	lastClaim *claimCall
	counts    map[string]int
	offerCh   string // the channel the claims offer on (model_offer_test.go)
	offering  bool   // every claim offers (opOffered)
}

func newModelRun(t *testing.T, seed uint64, seg int, lossy bool) *modelRun {
	t.Helper()
	s := seed + uint64(seg)
	r := &modelRun{
		t: t, ctx: context.Background(), seed: seed, seg: seg,
		rng:    rand.New(rand.NewPCG(s, 0x5eed)),
		chk:    rand.New(rand.NewPCG(s, 0xc4ec)),
		clk:    &testClock{now: time.Now().Truncate(time.Millisecond)},
		m:      newModel(),
		counts: map[string]int{},
	}
	retainCompleted, crashDelay := modelRetainCompleted, time.Second
	if lossy {
		r.name = "redis-lossy"
		px, err := chaos.NewProxy(env.Server.Addr())
		if err != nil {
			t.Fatal(err)
		}
		// One re-send, not go-redis's default three: two lost replies in a
		// row then fail the call now and then, and the test has to work out
		// whether it applied (reconcile).
		rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: 1,
			MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 4 * time.Millisecond})
		// Loaded first, so that a faulted call is a script's run, not an
		// EVALSHA answered NOSCRIPT.
		for _, sc := range []*lua.Script{lua.Enqueue, lua.Claim, lua.Renew, lua.Ack, lua.Step, lua.Cancel,
			lua.Delete, lua.Redrive, lua.Maintain, lua.Relay} {
			if err := sc.Load(r.ctx, rdb); err != nil {
				t.Fatal(err)
			}
		}
		direct := env.Server.Client()
		t.Cleanup(func() {
			rdb.Close()
			direct.Close()
			px.Close()
		})
		px.SetRandom(0.05, 0.05, s, chaos.Commands(lua.Commands...))
		r.rdb, r.direct, r.proxy = rdb, direct, px
	} else {
		r.name = "miniredis"
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { rdb.Close() })
		r.rdb, r.direct = rdb, rdb
		retainCompleted = -1 // completed jobs are deleted at once
		crashDelay = 0       // crashed jobs are available at once
	}
	r.crashDelay = crashDelay.Milliseconds()
	r.retainCompleted = -1
	if retainCompleted >= 0 {
		r.retainCompleted = retainCompleted.Milliseconds()
	}
	r.st = store.New(r.rdb, store.Config{
		NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted, RetainArchived: modelRetainArchived,
		RetainCancelled: modelRetainCancelled, CrashLimit: modelCrashLimit, CrashDelay: crashDelay, Now: r.clk.Now,
	})
	r.p = r.st.Partition("q", 0)
	r.subscribeOffers()
	r.epoch = r.clk.Now()
	r.highWater = r.now()
	for i := range 3 {
		r.inKeys = append(r.inKeys, r.p.Tag()+":fx:k"+strconv.Itoa(i))
	}
	// Foreign keys: in another slot, so their effects go through the outbox
	// and the relay.
	for i := 0; len(r.foreignKeys) < 2; i++ {
		k := "{" + r.st.NS() + ":elsewhere" + strconv.Itoa(i) + "}:fx:f"
		if keys.Slot(k) != keys.Slot(r.p.Tag()) {
			r.foreignKeys = append(r.foreignKeys, k)
		}
	}
	// A key holding a list: an INCRBY of it cannot apply (the script finds
	// out, not Go).
	r.listKey = r.p.Tag() + ":fx:list"
	if err := r.direct.RPush(r.ctx, r.listKey, "x").Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *modelRun) now() int64 { return r.clk.Now().UnixMilli() }

// logf records an operation of this step.
func (r *modelRun) logf(format string, a ...any) {
	r.log = keepLast(r.log, fmt.Sprintf("step %d [t+%s]: ", r.step, r.clk.Now().Sub(r.epoch))+fmt.Sprintf(format, a...),
		"SLUICE_MODEL_LOG", modelLogKeep)
}

// fail stops the run with what it takes to reproduce it.
func (r *modelRun) fail(format string, a ...any) {
	r.t.Helper()
	r.t.Fatalf("model %s: %s\n\nseed %d, segment %d, step %d; reproduce with\n  SLUICE_MODEL_SEED=%d SLUICE_MODEL_STEPS=%d go test -race -count=1 -run 'TestModel/%s' ./internal/store/\n(SLUICE_MODEL_LOG=n shows the last n operations)\nlast operations:\n  %s",
		r.name, fmt.Sprintf(format, a...), r.seed, r.seg, r.step, r.seed, r.total, r.name, strings.Join(r.log, "\n  "))
}

func (r *modelRun) run(steps int) {
	r.t.Helper()
	r.logf("start: namespace %s, partition tag %s", r.st.NS(), r.p.Tag())
	for r.step = 1; r.step <= steps; r.step++ {
		if len(r.m.calls) > 0 && time.Since(r.m.callsSince) > store.CallKeep/2 {
			// Before records expire on their own, at a moment the model
			// cannot know: forget them all now.
			r.forgetCalls()
		}
		r.randomOp()
		r.check(r.step%20 == 0)
	}
	// Drain the outbox: every relayed effect must now be applied once.
	for i := 0; ; i++ {
		n, err := r.direct.XLen(r.ctx, r.p.Outbox()).Result()
		if err != nil {
			r.fail("XLEN outbox: %v", err)
		}
		if n == 0 {
			break
		}
		if i == 20 {
			r.fail("the outbox still holds %d entries after 20 relays", n)
		}
		r.opRelay(100)
	}
	r.check(true)
	for _, k := range r.foreignKeys {
		if got, want := r.value(k), r.m.fx[k]; got != want {
			r.fail("after the outbox drained, foreign key %s = %d, want %d", k, got, want)
		}
	}
	var fired string
	if r.proxy != nil {
		d, u := r.proxy.Fired()
		fired = fmt.Sprintf("; proxy faults: %d replies dropped, %d requests duplicated", d, u)
	}
	r.t.Logf("model %s segment %d: %d steps, %d live jobs at the end%s; operations: %s",
		r.name, r.seg, steps, len(r.m.jobs), fired, r.countsString())
}

func (r *modelRun) countsString() string {
	var ks []string
	for k := range r.counts {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", k, r.counts[k])
	}
	return b.String()
}

func (r *modelRun) value(key string) int64 {
	v, err := r.direct.Get(r.ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		r.fail("GET %s: %v", key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail("effect key %s holds %q", key, v)
	}
	return n
}

// check fails the run unless Redis matches the model; full also scans for
// job hashes the model does not know.
func (r *modelRun) check(full bool) {
	r.t.Helper()
	if d := r.diff(r.m, full); len(d) > 0 {
		r.fail("Redis differs from the model:\n  %s", strings.Join(d, "\n  "))
	}
	// Forget deleted generated IDs after a while (caller IDs stay watched).
	for id, at := range r.m.gone {
		if !strings.HasPrefix(id, "c") && at < r.step-modelGoneWatch {
			delete(r.m.gone, id)
		}
	}
}

// settle adopts post, or after a failed call (err != nil: its outcome is
// unknown) whichever of pre and post Redis holds: a call applies once or
// not at all, never twice or in part. It reports whether post was
// adopted.
func (r *modelRun) settle(pre, post *model, err error, what string) bool {
	r.t.Helper()
	if err == nil {
		r.m = post
		return true
	}
	r.counts["unknown-outcome"]++
	dPost := r.diff(post, false)
	if len(dPost) == 0 {
		r.logf("%s failed (%v): it applied", what, err)
		r.m = post
		return true
	}
	dPre := r.diff(pre, false)
	if len(dPre) == 0 {
		r.logf("%s failed (%v): it did not apply", what, err)
		r.m = pre
		return false
	}
	r.fail("%s failed (%v) and Redis holds neither its outcome nor the state before it\nagainst its outcome:\n  %s\nagainst the state before:\n  %s",
		what, err, strings.Join(dPost, "\n  "), strings.Join(dPre, "\n  "))
	return false
}

// outboxEffect is an outbox entry's relayed effect (store's relayed).
type outboxEffect struct {
	Mark string   `msgpack:"m"`
	Key  string   `msgpack:"k"`
	Op   string   `msgpack:"o"`
	Args []string `msgpack:"a"`
}

// diff lists how Redis differs from m.
func (r *modelRun) diff(m *model, full bool) []string {
	ctx := r.ctx
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }

	zsets := []string{r.p.Sched(), r.p.Running(), r.p.Terminal("completed"), r.p.Terminal("archived"),
		r.p.Terminal("quarantined"), r.p.Terminal("cancelled")}
	ids := m.ids()
	var gone []string
	for id := range m.gone {
		gone = append(gone, id)
	}
	sort.Strings(gone)
	fxKeys := append(slices.Clone(r.inKeys), r.foreignKeys...)

	zcmds := make([]*redis.ZSliceCmd, len(zsets))
	lcmds := make([]*redis.StringSliceCmd, keys.Priorities)
	jcmds := make([]*redis.SliceCmd, len(ids))
	scmds := make([]*redis.MapStringStringCmd, len(ids))
	gcmds := make([]*redis.IntCmd, len(gone))
	var stats *redis.MapStringStringCmd
	var pm *redis.StringCmd
	var fxv *redis.SliceCmd
	var outbox *redis.XMessageSliceCmd
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, z := range zsets {
			zcmds[i] = pl.ZRangeWithScores(ctx, z, 0, -1)
		}
		for p := range keys.Priorities {
			lcmds[p] = pl.LRange(ctx, r.p.Available(p), 0, -1)
		}
		stats = pl.HGetAll(ctx, r.p.Stats())
		pm = pl.Get(ctx, r.p.Priorities())
		for i, id := range ids {
			jcmds[i] = pl.HMGet(ctx, r.p.Job(id), keys.FieldState, keys.FieldAttempt, keys.FieldCrashAttempt, keys.FieldFence,
				keys.FieldLeaseID, keys.FieldPriority, keys.FieldMaxAttempts, keys.FieldKind)
			scmds[i] = pl.HGetAll(ctx, r.p.Steps(id))
		}
		for i, id := range gone {
			gcmds[i] = pl.Exists(ctx, r.p.Job(id), r.p.Steps(id), r.p.Errors(id), r.p.Body(id))
		}
		fxv = pl.MGet(ctx, fxKeys...)
		outbox = pl.XRange(ctx, r.p.Outbox(), "-", "+")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return []string{fmt.Sprintf("reading Redis: %v", err)}
	}

	// Indexes: each zset holds exactly the jobs in its states, at the
	// model's scores. The scheduled index is the sched zset and the
	// buckets of later jobs (store.SchedIndex): a job put off to a bucket
	// leaves a stale entry in sched, at its earlier due time, which claims
	// skip.
	sched, err := store.SchedIndex(ctx, r.direct, r.p)
	if err != nil {
		return []string{fmt.Sprintf("reading the scheduled index: %v", err)}
	}
	for i, z := range zsets {
		in := map[string]bool{}
		for _, e := range zcmds[i].Val() {
			id, _ := e.Member.(string)
			in[id] = true
			j := m.jobs[id]
			switch {
			case z == r.p.Running() && id == keys.RunAnchor:
				if !math.IsInf(e.Score, 1) {
					bad("%s holds its anchor at %v, want +inf", z, e.Score)
				}
			case j == nil:
				bad("%s holds %s, which does not exist", z, id)
			case r.index(j.state) != z:
				bad("%s holds %s, which is %s", z, id, j.state)
			case z == r.p.Sched() && int64(e.Score) < j.score && sched[id] == j.score:
				// stale: the job is in a bucket since
			case int64(e.Score) != j.score:
				bad("%s scores %s (%s) %d, want %d (%+d ms)", z, id, j.state, int64(e.Score), j.score, int64(e.Score)-j.score)
			}
		}
		if z == r.p.Sched() {
			in = map[string]bool{}
			for id, at := range sched {
				in[id] = true
				if j := m.jobs[id]; j != nil && at != j.score {
					bad("the scheduled index has %s (%s) due at %d, want %d", id, j.state, at, j.score)
				}
			}
		}
		for _, id := range ids {
			if j := m.jobs[id]; r.index(j.state) == z && !in[id] {
				bad("%s (%s) is missing from %s", id, j.state, z)
			}
			if j := m.jobs[id]; z == r.p.Running() && j.state == "running" && !in[keys.RunAnchor] {
				bad("%s holds running job %s but no anchor (keys.RunAnchor)", z, id)
			}
		}
	}
	// Available jobs: in their priority's list, which the priority mask
	// flags.
	listed := map[string]map[int]int{} // id -> priority -> entries
	for p, c := range lcmds {
		for _, id := range c.Val() {
			if listed[id] == nil {
				listed[id] = map[int]int{}
			}
			listed[id][p]++
		}
	}
	mask, maskErr := pm.Bytes()
	for _, id := range ids {
		j := m.jobs[id]
		if j.state != "available" {
			continue
		}
		if listed[id][j.prio] == 0 {
			bad("%s is available but not in its priority %d list (lists: %v)", id, j.prio, listed[id])
		}
		if j.prio > 0 && maskErr == nil && !maskBit(mask, j.prio) {
			bad("%s is available at priority %d, which the priority mask %08b does not flag: no claim will find it", id, j.prio, mask)
		}
	}
	// Counters.
	sv := stats.Val()
	for _, s := range modelStates {
		want := len(m.inState(s))
		got, _ := strconv.Atoi(sv[s])
		if sv[s] == "" {
			got = 0
		}
		if got != want {
			bad("stats %s = %q, want %d", s, sv[s], want)
		}
	}
	// Job hashes and checkpoints.
	for i, id := range ids {
		j := m.jobs[id]
		v := jcmds[i].Val()
		if len(v) != 8 || v[0] == nil {
			bad("job %s (%s) is lost: no hash", id, j.state)
			continue
		}
		str := func(k int) string { s, _ := v[k].(string); return s }
		num := func(k int) int64 {
			if v[k] == nil {
				return 0
			}
			n, err := strconv.ParseInt(str(k), 10, 64)
			if err != nil {
				bad("job %s: field %d is %q", id, k, str(k))
			}
			return n
		}
		if s := store.StateName(str(0)); s != j.state {
			bad("job %s is %s, want %s", id, s, j.state)
		}
		if a := num(1); a != int64(j.attempt) {
			bad("job %s attempt %d, want %d", id, a, j.attempt)
		}
		if c := num(2); c != int64(j.crash) {
			bad("job %s crash_attempt %d, want %d", id, c, j.crash)
		}
		if f := num(3); f != j.fence {
			bad("job %s fence %d, want %d", id, f, j.fence)
		}
		if l := str(4); l != j.lease {
			bad("job %s lease %q, want %q", id, l, j.lease)
		}
		if pr := num(5); pr != int64(j.prio) {
			bad("job %s priority %d, want %d", id, pr, j.prio)
		}
		ma := int64(store.DefaultMaxAttempts)
		if v[6] != nil {
			ma = num(6)
		}
		if ma != int64(j.maxAttempts) {
			bad("job %s max attempts %d, want %d", id, ma, j.maxAttempts)
		}
		if k := str(7); k != j.kind {
			bad("job %s kind %q, want %q", id, k, j.kind)
		}
		steps := scmds[i].Val()
		if len(steps) != len(j.steps) {
			bad("job %s has step checkpoints %v, want %v", id, steps, j.steps)
		} else {
			for k, rec := range j.steps {
				if steps[k] != rec {
					bad("job %s has step checkpoints %v, want %v", id, steps, j.steps)
					break
				}
			}
		}
	}
	for i, id := range gone {
		if n := gcmds[i].Val(); n != 0 {
			bad("deleted job %s left %d of its keys (hash, steps, errors, body)", id, n)
		}
	}
	// Effects: in-slot keys hold exactly what the commits that applied
	// wrote; a foreign key with its unrelayed outbox entries does.
	pending := map[string]int64{}
	var marks []string
	var markFx []outboxEffect
	for _, e := range outbox.Val() {
		if e.Values["t"] != "fx" {
			bad("outbox entry %s is not an effect: %v", e.ID, e.Values)
			continue
		}
		b, _ := e.Values["b"].(string)
		var fx outboxEffect
		if err := msgpack.Unmarshal([]byte(b), &fx); err != nil || fx.Op != "INCRBY" || len(fx.Args) != 1 {
			bad("outbox entry %s: %+v %v", e.ID, fx, err)
			continue
		}
		marks = append(marks, fx.Mark)
		markFx = append(markFx, fx)
	}
	if len(marks) > 0 {
		ex := make([]*redis.IntCmd, len(marks))
		_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for i, mk := range marks {
				ex[i] = pl.Exists(ctx, mk)
			}
			return nil
		})
		if err != nil {
			return append(out, fmt.Sprintf("reading marks: %v", err))
		}
		for i, fx := range markFx {
			if ex[i].Val() == 0 { // not applied yet
				d, _ := strconv.ParseInt(fx.Args[0], 10, 64)
				pending[fx.Key] += d
			}
		}
	}
	for i, k := range fxKeys {
		var got int64
		if s, ok := fxv.Val()[i].(string); ok {
			got, _ = strconv.ParseInt(s, 10, 64)
		}
		if p := pending[k]; p != 0 || slices.Contains(r.foreignKeys, k) {
			if got+p != m.fx[k] {
				bad("foreign effect key %s = %d with %d waiting in the outbox, want %d in all", k, got, p, m.fx[k])
			}
		} else if got != m.fx[k] {
			bad("effect key %s = %d, want %d", k, got, m.fx[k])
		}
	}
	// Decoding: a few jobs read the way the store reads them.
	for range min(2, len(ids)) {
		id := ids[r.chk.IntN(len(ids))]
		j := m.jobs[id]
		got, _, err := r.st.Get(ctx, keys.Ref{Partition: r.p, Local: id})
		if err != nil {
			bad("Get %s: %v", id, err)
			continue
		}
		lease := j.lease // Get shows a lease only while it runs
		if j.state != "running" {
			lease = ""
		}
		if got.State != j.state || got.Attempt != j.attempt || got.CrashAttempt != j.crash || got.Fence != j.fence ||
			got.LeaseID != lease || got.Kind != j.kind || string(got.Payload) != j.payload || got.Priority != j.prio ||
			got.MaxAttempts != j.maxAttempts || (j.state == "running" && got.LeaseExpiry.UnixMilli() != j.score) {
			bad("Get %s = state %s attempt %d crash %d fence %d lease %q kind %q payload %q, want %+v",
				id, got.State, got.Attempt, got.CrashAttempt, got.Fence, got.LeaseID, got.Kind, got.Payload, *j)
		}
	}
	if full {
		var found []string
		iter := r.direct.Scan(ctx, 0, r.p.Job("*"), 1000).Iterator()
		for iter.Next(ctx) {
			found = append(found, strings.TrimPrefix(iter.Val(), r.p.Job("")))
		}
		if err := iter.Err(); err != nil {
			bad("SCAN: %v", err)
		}
		sort.Strings(found)
		if !slices.Equal(found, ids) {
			bad("job hashes in Redis %v, the model knows %v", found, ids)
		}
	}
	return out
}

// maskBit reports whether the priority mask flags priority p (bit p as
// SETBIT numbers it).
func maskBit(mask []byte, p int) bool {
	if p/8 >= len(mask) {
		return false
	}
	return mask[p/8]>>(7-p%8)&1 == 1
}

// TestModelRegressions reproduces, each in a few deterministic steps,
// defects TestModel found: a cursor checkpoint re-sent after its call
// record expired applied its effects again, and a job's stale entry in an
// available list let it jump the queue. (A third, relayed effects of a job
// enqueued again under a deleted job's ID taken for the old job's, was in
// the runtime's commit names: step's TestReusedIDCommitsApart.)
func TestModelRegressions(t *testing.T) {
	t.Parallel()
	b := backend{"redis", env.Server.Client()}
	t.Cleanup(func() { b.rdb.Close() })
	ref := func(f *fixture, id string) string { return keys.Ref{Partition: f.p, Local: id}.String() }

	// Late re-send: once its call record expired (CallKeep), a cursor
	// checkpoint delivered again while the attempt still holds the lease
	// must not apply its effects a second time (lib_replay.lua: past
	// CallKeep "each script's own checks still keep a late second run from
	// applying anything twice").
	t.Run("late re-sent cursor advance applies once", func(t *testing.T) {
		f := newFixture(t, b)
		f.enqueue(store.NewJob{Local: "a"})
		j := f.claimOne("w")
		c := store.Checkpoint{Lease: lease(j), Field: "cursor:c", Record: []byte("1"), Mode: store.ModeCursor,
			Commit: ref(f, "a") + ":c:@1", Effects: []sluicetype.Effect{fx("INCRBY", f.key("rows"), "100")}}
		if _, err := f.checkpoint(c); err != nil {
			t.Fatal(err)
		}
		iter := f.rdb.Scan(f.ctx, 0, f.p.Call("*"), 100).Iterator() // CallKeep passes
		for iter.Next(f.ctx) {
			f.rdb.Del(f.ctx, iter.Val())
		}
		if _, err := f.checkpoint(c); err != nil {
			t.Fatal(err)
		}
		f.wantValue("rows", "100")
	})

	// A cancel or a delete of an available job takes its list entry out
	// (lib_limits.lua unlist): a job re-enqueued under the ID at priority 0
	// is not claimed from the old priority-2 entry before a priority-2 job
	// that waits, and a cancelled job redriven (to the back of its list)
	// is not claimed from its old place, ahead of the jobs behind it.
	t.Run("no stale list entry jumps the queue", func(t *testing.T) {
		f := newFixture(t, b)
		f.enqueue(store.NewJob{Local: "a", Priority: 2})
		if _, err := f.st.Delete(f.ctx, keys.Ref{Partition: f.p, Local: "a"}); err != nil {
			t.Fatal(err)
		}
		f.enqueue(store.NewJob{Local: "a", Priority: 0}, store.NewJob{Local: "b", Priority: 2})
		if j := f.claimOne("w"); j.Local != "b" {
			t.Errorf("claimed %s (priority %d) while b (priority 2) waits", j.Local, j.Priority)
		}

		g := newFixture(t, b)
		g.enqueue(store.NewJob{Local: "x"}, store.NewJob{Local: "y"})
		if _, err := g.st.Cancel(g.ctx, keys.Ref{Partition: g.p, Local: "x"}, modelRetainCancelled); err != nil {
			t.Fatal(err)
		}
		if errs, err := g.st.RedriveIDs(g.ctx, g.p, store.ActionRedrive, []string{"x"}); err != nil || errs[0] != nil {
			t.Fatal(errs, err)
		}
		if j := g.claimOne("w"); j.Local != "y" {
			t.Errorf("claimed %s, redriven to the back of the list, ahead of y", j.Local)
		}
	})
}
