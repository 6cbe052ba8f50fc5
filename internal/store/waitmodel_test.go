package store_test

// TestWaitModel is a randomised model-based test of durable waits at the
// store level: suspended workflows (an ack 'suspend' on timers and
// signals, lua/lib_waits.lua), the signals sent to jobs (lua/signal.lua),
// taken by step commits (lua/step.lua 'take:') or discarded by an
// operator (lua/unsignal.lua), and timers that come due (claims and
// maintenance promote the job). Random operations (waitmodel_ops_test.go)
// run against Redis, and after every step Redis is checked against a
// small model of what they must have done:
//
//   - each job's state, attempt, crash count and fence; a suspended job
//     is scheduled at its earliest timer (never due when it waits for
//     signals only) and names the attempt that suspended it and the
//     signals it waits for; it is woken exactly when one of its waits is
//     satisfied (a kept signal of an awaited name, or a due timer found by
//     a claim or maintenance), never before, and never by a signal its
//     current suspension does not wait for;
//   - every timer keeps its first wake time for the job's life;
//   - every signal sent and kept is kept exactly once, with its sequence
//     number and payload, until a step takes it or an operator discards
//     it: a keyed duplicate keeps nothing, a re-sent call keeps nothing
//     more, sequence numbers increase, a signal is taken at most once;
//   - every job is in exactly the index its state names, at the model's
//     score, and in no other; the stats count each state; a deleted job
//     leaves none of its keys; no job is lost and none appears;
//   - a claim hands out the job's kept signals and timers.
//
// It runs against miniredis with no faults and against the shared
// redis-server through the chaos proxy, which loses replies and delivers
// requests twice (go-redis re-sends a call whose reply it lost).
//
// Environment:
//
//	SLUICE_WAITMODEL_SEED   the seed (default: from the time); logged
//	SLUICE_WAITMODEL_STEPS  steps per run (default 300, 150 with -short)
//	SLUICE_WAITMODEL_SEEDS  how many seeds (seed, seed+1, ...) each mode
//	                        runs (default 2)
//	SLUICE_WAITMODEL_STRICT_BUCKETS  set: a job listed twice in a bucket
//	                        of later jobs fails the run (else counted)
//	SLUICE_WAITMODEL_LOG    how many of the last operations a failure
//	                        shows (default 30)

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/checkpoint"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

const (
	waitDefaultSteps = 300
	waitDefaultSeeds = 2
	waitLease        = 30 * time.Second
	waitMaxAttempts  = 3
	waitCrashLimit   = 3
	waitRetainArch   = 6 * time.Hour
	waitRetainCanc   = 2 * time.Hour
	waitRetainComp   = time.Hour
	// waitIDs is the pool of job IDs: small, so that deleted IDs are
	// enqueued again and signals to finished and deleted jobs are common.
	waitIDs     = 14
	waitMaxLive = 10
	waitLogKeep = 30
)

func TestWaitModel(t *testing.T) {
	t.Parallel()
	seed := envSeed(t, "SLUICE_WAITMODEL_SEED")
	steps := waitDefaultSteps
	if testing.Short() {
		steps = 150
	}
	steps = envSteps(t, "SLUICE_WAITMODEL_STEPS", steps)
	seeds := envSteps(t, "SLUICE_WAITMODEL_SEEDS", waitDefaultSeeds)
	t.Logf("wait model: seeds %d..%d, %d steps each; reproduce one with SLUICE_WAITMODEL_SEED=<seed> SLUICE_WAITMODEL_SEEDS=1 SLUICE_WAITMODEL_STEPS=%d go test -count=1 -run TestWaitModel ./internal/store/",
		seed, seed+uint64(seeds)-1, steps, steps)
	for _, lossy := range []bool{false, true} {
		name := "miniredis"
		if lossy {
			name = "redis-lossy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := range seeds {
				r := newWaitRun(t, seed+uint64(i), lossy)
				r.run(steps)
			}
		})
	}
}

// wsig is a kept signal.
type wsig struct {
	seq           int64
	name, payload string
}

func (s wsig) field() string {
	return fmt.Sprintf("%s%010d:%s", checkpoint.SignalPrefix, s.seq, s.name)
}

// wjob is the model of one job.
type wjob struct {
	id, state      string
	attempt, crash int
	fence          int64
	lease          string // the hash's lease ID ("" before the first claim, or after a reap)
	score          int64  // due (scheduled, retryable), lease expiry (running), deletion (terminal)
	started        int64
	deadline       int64 // ms, 0: none
	prio           int
	finished       int64 // when it reached its terminal state (ms)
	// susp: suspended by the attempt of fence, waiting for awaits (and
	// its timers); false once woken, or for a job scheduled otherwise
	susp    bool
	awaits  []string
	timers  map[string]int64 // every timer it ever waited on: its first wake time
	signals []wsig           // kept, by sequence number
	seq     int64            // the signal counter
	used    map[string]bool  // idempotency keys sent
	steps   map[string]string
	created int64 // its creation time (ms): a job of the ID enqueued again has its own
}

func (j *wjob) clone() *wjob {
	c := *j
	c.awaits = slices.Clone(j.awaits)
	c.timers = maps.Clone(j.timers)
	c.signals = slices.Clone(j.signals)
	c.used = maps.Clone(j.used)
	c.steps = maps.Clone(j.steps)
	return &c
}

// kept reports whether a signal named one of names is kept.
func (j *wjob) kept(names []string) bool {
	for _, s := range j.signals {
		if slices.Contains(names, s.name) {
			return true
		}
	}
	return false
}

type wmodel struct {
	jobs map[string]*wjob
	gone map[string]bool // deleted IDs, checked absent until enqueued again
	// taken holds every signal taken or discarded (job@created:seq): never
	// seen again
	taken map[string]bool
}

func (m *wmodel) clone() *wmodel {
	c := &wmodel{jobs: map[string]*wjob{}, gone: maps.Clone(m.gone), taken: maps.Clone(m.taken)}
	for id, j := range m.jobs {
		c.jobs[id] = j.clone()
	}
	return c
}

func (m *wmodel) ids() []string { return slices.Sorted(maps.Keys(m.jobs)) }

func (m *wmodel) inState(states ...string) []*wjob {
	var out []*wjob
	for _, id := range m.ids() {
		if j := m.jobs[id]; slices.Contains(states, j.state) {
			out = append(out, j)
		}
	}
	return out
}

// waitRun is one run: a store on its own namespace, its model and log.
type waitRun struct {
	t      *testing.T
	ctx    context.Context
	name   string
	seed   uint64
	rng    *rand.Rand
	chk    *rand.Rand
	st     *store.Store
	direct redis.UniversalClient
	proxy  *chaos.Proxy
	clk    *testClock
	p      keys.Partition
	m      *wmodel

	retainCompleted int64 // ms, -1: deleted at once
	crashDelay      int64 // ms, 0: available at once
	epoch           time.Time
	step            int
	log             []string
	leases          []store.Lease
	counts          map[string]int
	lastTake        []store.Checkpoint
	takes           map[string][]string // answers of the take commits sent, by content
	lastSignal      *sentSignal
	created         map[string]int // job ID -> the step that enqueued it (names taken signals apart)
}

func newWaitRun(t *testing.T, seed uint64, lossy bool) *waitRun {
	t.Helper()
	r := &waitRun{
		t: t, ctx: context.Background(), seed: seed,
		rng:     rand.New(rand.NewPCG(seed, 0x3a17)),
		chk:     rand.New(rand.NewPCG(seed, 0xc43c)),
		clk:     &testClock{now: time.Now().Truncate(time.Millisecond)},
		m:       &wmodel{jobs: map[string]*wjob{}, gone: map[string]bool{}, taken: map[string]bool{}},
		counts:  map[string]int{},
		created: map[string]int{},
		takes:   map[string][]string{},
	}
	retainCompleted, crashDelay := waitRetainComp, time.Second
	var rdb redis.UniversalClient
	r.name, rdb, r.direct, r.proxy = modelRedis(t, lossy, seed, lua.Enqueue, lua.Claim, lua.Ack, lua.Step, lua.Cancel,
		lua.Delete, lua.Redrive, lua.Maintain, lua.Signal, lua.Unsignal, lua.RunNow)
	if !lossy { // the other branches of the scripts
		retainCompleted, crashDelay = -1, 0
	}
	r.crashDelay = crashDelay.Milliseconds()
	r.retainCompleted = -1
	if retainCompleted >= 0 {
		r.retainCompleted = retainCompleted.Milliseconds()
	}
	r.st = store.New(rdb, store.Config{
		NS: redistest.NewNamespace(t), RetainCompleted: retainCompleted, RetainArchived: waitRetainArch,
		RetainCancelled: waitRetainCanc, CrashLimit: waitCrashLimit, CrashDelay: crashDelay, Now: r.clk.Now,
	})
	r.p = r.st.Partition("q", 0)
	r.epoch = r.clk.Now()
	return r
}

func (r *waitRun) now() int64 { return r.clk.Now().UnixMilli() }

func (r *waitRun) ref(id string) keys.Ref { return keys.Ref{Partition: r.p, Local: id} }

func (r *waitRun) logf(format string, a ...any) {
	r.log = keepLast(r.log, fmt.Sprintf("step %d [t+%s]: ", r.step, r.clk.Now().Sub(r.epoch))+fmt.Sprintf(format, a...),
		"SLUICE_WAITMODEL_LOG", waitLogKeep)
}

func (r *waitRun) fail(format string, a ...any) {
	r.t.Helper()
	r.t.Fatalf("wait model %s: %s\n\nseed %d, step %d; reproduce with\n  SLUICE_WAITMODEL_SEED=%d SLUICE_WAITMODEL_SEEDS=1 SLUICE_WAITMODEL_STEPS=%d go test -count=1 -run 'TestWaitModel/%s' ./internal/store/\nlast operations:\n  %s",
		r.name, fmt.Sprintf(format, a...), r.seed, r.step, r.seed, r.step, r.name, strings.Join(r.log, "\n  "))
}

func (r *waitRun) run(steps int) {
	r.t.Helper()
	r.logf("start: namespace %s, seed %d", r.st.NS(), r.seed)
	for r.step = 1; r.step <= steps; r.step++ {
		r.randomOp()
		r.check(r.step%10 == 0)
	}
	r.check(true)
	var fired string
	if r.proxy != nil {
		d, u := r.proxy.Fired()
		fired = fmt.Sprintf("; proxy faults: %d replies dropped, %d requests duplicated", d, u)
	}
	var ks []string
	for k, v := range r.counts {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	r.t.Logf("wait model %s seed %d: %d steps, %d live jobs%s; %s", r.name, r.seed, steps, len(r.m.jobs), fired, strings.Join(ks, " "))
}

func (r *waitRun) check(full bool) {
	r.t.Helper()
	if d := r.diff(r.m, full); len(d) > 0 {
		r.fail("Redis differs from the model:\n  %s", strings.Join(d, "\n  "))
	}
}

// settle adopts post, or, after a call whose outcome is unknown (err),
// whichever of pre and post Redis holds.
func (r *waitRun) settle(pre, post *wmodel, err error, what string) bool {
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

// index is the zset a job in state is a member of ("" for available and
// for scheduled and retryable, whose index is store.SchedIndex).
func (r *waitRun) index(state string) string {
	switch state {
	case "running":
		return r.p.Running()
	case "completed", "archived", "quarantined", "cancelled":
		return r.p.Terminal(state)
	}
	return ""
}

// diff lists how Redis differs from m.
func (r *waitRun) diff(m *wmodel, full bool) []string {
	ctx := r.ctx
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	ids := m.ids()
	gone := slices.Sorted(maps.Keys(m.gone))
	zsets := []string{r.p.Running(), r.p.Terminal("completed"), r.p.Terminal("archived"),
		r.p.Terminal("quarantined"), r.p.Terminal("cancelled")}
	zcmds := make([]*redis.ZSliceCmd, len(zsets))
	lcmds := make([]*redis.StringSliceCmd, keys.Priorities)
	hcmds := make([]*redis.MapStringStringCmd, len(ids))
	scmds := make([]*redis.MapStringStringCmd, len(ids))
	gcmds := make([]*redis.IntCmd, len(gone))
	var stats *redis.MapStringStringCmd
	var pm *redis.StringCmd
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, z := range zsets {
			zcmds[i] = pl.ZRangeWithScores(ctx, z, 0, -1)
		}
		for p := range keys.Priorities {
			lcmds[p] = pl.LRange(ctx, r.p.Available(p), 0, -1)
		}
		for i, id := range ids {
			hcmds[i] = pl.HGetAll(ctx, r.p.Job(id))
			scmds[i] = pl.HGetAll(ctx, r.p.Steps(id))
		}
		for i, id := range gone {
			gcmds[i] = pl.Exists(ctx, r.p.Job(id), r.p.Steps(id))
		}
		stats = pl.HGetAll(ctx, r.p.Stats())
		pm = pl.Get(ctx, r.p.Priorities())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return []string{fmt.Sprintf("reading Redis: %v", err)}
	}
	sched, err := store.SchedIndex(ctx, r.direct, r.p)
	if err != nil {
		return []string{fmt.Sprintf("reading the scheduled index: %v", err)}
	}
	// the scheduled index: exactly the scheduled and retryable jobs, at
	// their due times
	for id, at := range sched {
		j := m.jobs[id]
		switch {
		case j == nil:
			bad("the scheduled index holds %s, which does not exist", id)
		case j.state != "scheduled" && j.state != "retryable":
			bad("the scheduled index holds %s, which is %s", id, j.state)
		case at != j.score:
			bad("the scheduled index has %s (%s, suspended %v) due at %d, want %d (%+d ms)", id, j.state, j.susp, at, j.score, at-j.score)
		}
	}
	// a bucket of later jobs lists each job it holds once, mostly: a job
	// that comes back to a bucket it left early (woken by a signal, then
	// asleep on the same timer) is listed by its old entry (lib_ready.lua
	// note_left, sched_add). Not always (a job that left more than
	// LEFT_NOTES buckets; a deleted job's ID enqueued again into the
	// bucket its entry is in), and a second entry changes nothing but a
	// listing: counted, not failed.
	buckets, err := r.direct.ZRange(ctx, r.p.Later(), 0, -1).Result()
	if err != nil {
		return []string{fmt.Sprintf("reading the buckets: %v", err)}
	}
	for _, b := range buckets {
		n, _ := strconv.ParseInt(b, 10, 64)
		entries, err := r.direct.LRange(ctx, r.p.LaterBucket(b), 0, -1).Result()
		if err != nil {
			return []string{fmt.Sprintf("reading bucket %s: %v", b, err)}
		}
		seen := map[string]int{}
		for _, id := range entries {
			if j := m.jobs[id]; j != nil && (j.state == "scheduled" || j.state == "retryable") && j.score/store.LaterBucketMS == n {
				seen[id]++
			}
		}
		for _, c := range seen {
			if c > 1 && m == r.m {
				r.counts["~bucket-lists-a-job-twice"]++
				if os.Getenv("SLUICE_WAITMODEL_STRICT_BUCKETS") != "" {
					bad("bucket %s lists %d times: %v", b, c, entries)
				}
			}
		}
	}
	for i, z := range zsets {
		in := map[string]bool{}
		for _, e := range zcmds[i].Val() {
			id, _ := e.Member.(string)
			if id == keys.RunAnchor {
				continue
			}
			in[id] = true
			j := m.jobs[id]
			switch {
			case j == nil:
				bad("%s holds %s, which does not exist", z, id)
			case r.index(j.state) != z:
				bad("%s holds %s, which is %s", z, id, j.state)
			case int64(e.Score) != j.score:
				bad("%s scores %s (%s) %d, want %d", z, id, j.state, int64(e.Score), j.score)
			}
		}
		for _, id := range ids {
			if r.index(m.jobs[id].state) == z && !in[id] {
				bad("%s (%s) is missing from %s", id, m.jobs[id].state, z)
			}
		}
	}
	for _, id := range ids {
		if j := m.jobs[id]; (j.state == "scheduled" || j.state == "retryable") && sched[id] == 0 {
			if _, ok := sched[id]; !ok {
				bad("%s (%s, suspended %v) is missing from the scheduled index", id, j.state, j.susp)
			}
		}
	}
	listed := map[string]int{}
	for p, c := range lcmds {
		for _, id := range c.Val() {
			listed[id]++
			if j := m.jobs[id]; j != nil && p != j.prio {
				bad("%s (priority %d) is listed at priority %d", id, j.prio, p)
			}
		}
	}
	for id, n := range listed {
		j := m.jobs[id]
		switch {
		case j == nil:
			bad("an available list holds %s, which does not exist", id)
		case j.state != "available":
			bad("an available list holds %s, which is %s", id, j.state)
		case n != 1:
			bad("%s is listed %d times", id, n)
		}
	}
	mask, maskErr := pm.Bytes()
	for _, id := range ids {
		j := m.jobs[id]
		if j.state == "available" && listed[id] == 0 {
			bad("%s is available but in no available list", id)
		}
		if j.state == "available" && j.prio > 0 && maskErr == nil && !maskBit(mask, j.prio) {
			bad("%s is available at priority %d, which the priority mask %08b does not flag: no claim finds it", id, j.prio, mask)
		}
	}
	sv := stats.Val()
	for _, s := range []string{"available", "scheduled", "running", "retryable", "completed", "archived", "quarantined", "cancelled"} {
		got, _ := strconv.Atoi(sv[s])
		if want := len(m.inState(s)); got != want {
			bad("stats %s = %q, want %d", s, sv[s], want)
		}
	}
	for i, id := range ids {
		j := m.jobs[id]
		h := hcmds[i].Val()
		if len(h) == 0 {
			bad("job %s (%s) is lost: no hash", id, j.state)
			continue
		}
		if s := store.StateName(h[keys.FieldState]); s != j.state {
			bad("job %s is %s, want %s", id, s, j.state)
		}
		num := func(f string) int64 { n, _ := strconv.ParseInt(h[f], 10, 64); return n }
		if a := num(keys.FieldAttempt); a != int64(j.attempt) {
			bad("job %s attempt %d, want %d", id, a, j.attempt)
		}
		if c := num(keys.FieldCrashAttempt); c != int64(j.crash) {
			bad("job %s crash_attempt %d, want %d", id, c, j.crash)
		}
		if f := num(keys.FieldFence); f != j.fence {
			bad("job %s fence %d, want %d", id, f, j.fence)
		}
		if l := h[keys.FieldLeaseID]; l != j.lease {
			bad("job %s lease %q, want %q", id, l, j.lease)
		}
		if sq := num(keys.FieldSignalSeq); sq != j.seq {
			bad("job %s signal counter %d, want %d", id, sq, j.seq)
		}
		timers := map[string]int64{}
		for f, v := range h {
			if name, ok := strings.CutPrefix(f, checkpoint.TimerPrefix); ok {
				timers[name], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if !maps.Equal(timers, j.timers) && (len(timers) > 0 || len(j.timers) > 0) {
			bad("job %s timers %v, want %v", id, timers, j.timers)
		}
		// the suspension: F.awaits names the suspending attempt's fence
		// and the signals it waits for
		wa := strings.Fields(h[keys.FieldAwaits])
		suspended := j.state == "scheduled" && len(wa) > 0 && wa[0] == strconv.FormatInt(j.fence, 10)
		if suspended != j.susp {
			bad("job %s (%s) suspended %v (awaits %q, fence %d), want %v", id, j.state, suspended, h[keys.FieldAwaits], j.fence, j.susp)
		} else if j.susp && !slices.Equal(wa[1:], j.awaits) {
			bad("job %s awaits %v, want %v", id, wa[1:], j.awaits)
		}
		// the steps hash: kept signals, used keys, step checkpoints
		var sigs []wsig
		used := map[string]bool{}
		steps := map[string]string{}
		for f, v := range scmds[i].Val() {
			switch {
			case strings.HasPrefix(f, checkpoint.SignalPrefix):
				seq, name, ok := checkpoint.Signal(f)
				if !ok {
					bad("job %s has a signal field %q that does not parse", id, f)
				}
				sigs = append(sigs, wsig{seq, name, v})
			case strings.HasPrefix(f, "!i:"):
				used[f[3:]] = true
			default:
				steps[f] = v
			}
		}
		sort.Slice(sigs, func(a, b int) bool { return sigs[a].seq < sigs[b].seq })
		if !slices.Equal(sigs, j.signals) {
			bad("job %s keeps signals %v, want %v", id, sigs, j.signals)
		}
		for _, s := range sigs {
			if m.taken[r.sigName(id, s.seq)] {
				bad("job %s keeps signal #%d, which was taken or discarded", id, s.seq)
			}
		}
		if !maps.Equal(used, j.used) && (len(used) > 0 || len(j.used) > 0) {
			bad("job %s has used signal keys %v, want %v", id, slices.Sorted(maps.Keys(used)), slices.Sorted(maps.Keys(j.used)))
		}
		if !maps.Equal(steps, j.steps) && (len(steps) > 0 || len(j.steps) > 0) {
			bad("job %s has checkpoints %v, want %v", id, steps, j.steps)
		}
	}
	for i, id := range gone {
		if n := gcmds[i].Val(); n != 0 {
			bad("deleted job %s left %d of its keys (hash, steps)", id, n)
		}
	}
	// a few jobs read as the store reads them (flow.JobInfo's fields)
	for range min(2, len(ids)) {
		id := ids[r.chk.IntN(len(ids))]
		j := m.jobs[id]
		got, _, err := r.st.Get(ctx, r.ref(id))
		if err != nil {
			bad("Get %s: %v", id, err)
			continue
		}
		if got.State != j.state || got.Suspended != j.susp || (j.susp && !slices.Equal(got.AwaitingSignals, j.awaits)) {
			bad("Get %s: state %s suspended %v awaiting %v, want %s %v %v", id, got.State, got.Suspended, got.AwaitingSignals, j.state, j.susp, j.awaits)
		}
		if j.susp {
			want := time.Time{}
			if j.score < store.NeverDue {
				want = time.UnixMilli(j.score)
			}
			if !got.RunAt.Equal(want) {
				bad("Get %s: suspended until %v, want %v", id, got.RunAt, want)
			}
		}
	}
	if full {
		var found []string
		iter := r.direct.Scan(ctx, 0, r.p.Job("*"), 1000).Iterator()
		for iter.Next(ctx) {
			found = append(found, strings.TrimPrefix(iter.Val(), r.p.Job("")))
		}
		sort.Strings(found)
		if !slices.Equal(found, ids) {
			bad("job hashes in Redis %v, the model knows %v", found, ids)
		}
	}
	return out
}

// sigName names signal seq of the job id as enqueued last (an ID enqueued
// again starts its signals afresh).
func (r *waitRun) sigName(id string, seq int64) string {
	return fmt.Sprintf("%s@%d#%d", id, r.created[id], seq)
}
