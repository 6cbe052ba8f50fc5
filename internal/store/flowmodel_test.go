package store_test

// TestFlowModel is a randomised model-based test of the store's flow
// control, which TestModel (model_test.go) leaves out: concurrency keys,
// rate classes, unique keys with their duplicate policies (reject,
// replace, debounce) and quarantine holds, in enqueue batches that mix
// them, under claims, acks (ok, retry, crash, snooze), cancels, deletes,
// releases, run-nows, maintenance and clock moves (now and then back a
// few seconds). Operations are in flowmodel_ops_test.go.
//
// The model is coarse on purpose: it knows every job it enqueued and did
// not delete, its options, and its state class (pending: available,
// scheduled or retryable; running, under which lease; or the terminal
// state a reply named). After every step Redis is read with an unfaulted
// client and checked:
//
//   - no job is lost, none exists the model does not know, and each is in
//     the state class the model says;
//   - no concurrency key runs more jobs than its limit, and the key's
//     running counter (keys.Partition.Concurrency) equals the jobs running
//     under it;
//   - a unique key names an existing, unfinished job that carries it; any
//     other unfinished job carrying the key was redriven or released while
//     the key was held (redrive.lua: it takes the key again only when
//     free); enqueue answers "unique <holder>" exactly when the key is
//     held, naming the holder;
//   - a held job (HeldBy) is scheduled (or available, when it has a
//     deadline: listed at it, for a claim to archive), on its
//     fingerprint's held list, and names a quarantined job of its
//     fingerprint; a job added while a job of its fingerprint is
//     quarantined is added held; a job seen held stays held (runs not)
//     while any job of its fingerprint is quarantined, unless archived
//     by its deadline (deadline_exceeded, by a claim: some jobs with a
//     fingerprint have one);
//   - no rate class leases more jobs than its token bucket allows:
//     between any two leases, at most burst + rate * the store time the
//     clock moved forward meanwhile (checked at the end: checkRates);
//   - replies agree with the model: a replace gives a holder that has not
//     started the duplicate's payload, an ack of a lease that ran out by
//     store time is stale and one that has not is not, maintenance reaps
//     exactly the leases that ran out, operator calls apply exactly in
//     the states they take (run now refuses a held job);
//   - at the end, a drain releases every quarantined job and moves the
//     clock on, claiming and completing, until every job is finished:
//     every pending job is claimable in the end, and nothing is left
//     running or held.
//
// It runs against miniredis and against the shared redis-server through
// the chaos proxy (dropped replies, duplicated requests).
//
// Environment:
//
//	SLUICE_FLOWMODEL_SEED   the seed (default: from the time); logged
//	SLUICE_FLOWMODEL_STEPS  steps per run (default 400)
//	SLUICE_FLOWMODEL_LOG    how many of the last operations a failure shows
//	                        (default 25)

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/chaos"
	"github.com/sluicehq/sluice/internal/keys"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/internal/store"
	"github.com/sluicehq/sluice/lua"
)

const (
	flowDefaultSteps = 400
	flowLease        = 30 * time.Second
	flowMaxJobs      = 60
	flowLogKeep      = 25
)

// The pools options are drawn from. Each key's limit and each class's
// rate are fixed for the run.
var (
	flowCKeys   = []string{"ck0", "ck1", "ck2"}
	flowCLimit  = map[string]int{"ck0": 1, "ck1": 2, "ck2": 1}
	flowRClass  = []string{"rc0", "rc1"}
	flowRate    = map[string][3]int{"rc0": {2, 1000, 2}, "rc1": {1, 5000, 1}} // jobs, per ms, burst
	flowUKeys   = []string{"u0", "u1", "u2", "u3"}
	flowFPrints = []string{"fpA", "fpB"}
)

func TestFlowModel(t *testing.T) {
	t.Parallel()
	seed := envSeed(t, "SLUICE_FLOWMODEL_SEED")
	steps := envSteps(t, "SLUICE_FLOWMODEL_STEPS", flowDefaultSteps)
	t.Logf("flow model: seed %d, %d steps; reproduce with SLUICE_FLOWMODEL_SEED=%d SLUICE_FLOWMODEL_STEPS=%d go test -count=1 -run TestFlowModel ./internal/store/",
		seed, steps, seed, steps)
	for _, lossy := range []bool{false, true} {
		name := "miniredis"
		if lossy {
			name = "redis-lossy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newFlowRun(t, seed, steps, lossy)
			r.run()
		})
	}
}

// fjob is the model of one job: its options, and its state class.
type fjob struct {
	id             string
	ck, rc, uk, fp string
	// state: "pending" (available, scheduled, retryable), "running", or a
	// terminal state
	state   string
	lease   string
	fence   int64
	started int64 // store ms of its last claim
	payload string
	// mustHold: seen held; it must stay held while a job of its
	// fingerprint is quarantined (or be archived at its deadline)
	mustHold bool
	// deadline: its deadline (store ms), 0 none; only jobs with a
	// fingerprint have one, which archives them held or not
	deadline int64
	// sw, sm: its sticky routing, worker and mode ("" unpinned;
	// flowmodel_sticky_test.go)
	sw, sm string
	// snoozedTo: the due time the snooze that ended its last attempt gave
	// it (store ms): the delay's end, or its deadline when that is sooner
	// (lib_ready.lua schedule_at); 0 when its last attempt ended
	// otherwise or it has been claimed since
	snoozedTo int64
}

// fsnap is what Redis holds, read directly.
type fsnap struct {
	jobs    map[string]fstate
	uq      map[string]string // unique key -> ID it names
	qh      map[string]string // fingerprint -> ID it names
	heldOn  map[string][]string
	cc      map[string]int
	scanned []string // job IDs found by SCAN (full checks only)
	// lists and pinx: where jobs are listed, fallback deadlines
	// (flowmodel_sticky_test.go)
	lists *flowLists
	pinx  map[string]int64
	// promises: rate classes' promises and buckets
	// (flowmodel_rate_test.go)
	promises *flowPromises
}

type fstate struct {
	exists                    bool
	state                     string
	ck, uk, qf, qb, lease, rc string
	payload                   string
	fence, redrives, crashes  int64
	sw, sm, sf                string // sticky worker, mode, handed by its fallback
	pr                        int64
	runAt                     int64 // its due time (ms), while scheduled
}

func coarse(state string) string {
	switch state {
	case "available", "scheduled", "retryable":
		return "pending"
	}
	return state
}

type flowRun struct {
	t      *testing.T
	ctx    context.Context
	name   string
	seed   uint64
	steps  int
	rng    *rand.Rand
	st     *store.Store
	direct redis.UniversalClient
	proxy  *chaos.Proxy
	clk    *testClock
	p      keys.Partition
	epoch  time.Time

	jobs    map[string]*fjob
	gone    map[string]bool
	snap    *fsnap
	step    int
	nextID  int
	nonce   int
	log     []string
	counts  map[string]int
	drained bool
	// workerGone: workers that claim nothing (flowmodel_sticky_test.go)
	workerGone map[string]bool
	// refilled is the store time (ms) the clock moved forward: a bound on
	// how much any token bucket refilled (lib_limits.lua bucket: between
	// two loads it refills NOW - u, u at least the clock at the first;
	// its exact time is out of reach with a clock that steps back, where
	// u stays up to a full bucket's refill ahead)
	refilled int64
	// rated lists, per rate class, refilled at each lease of one of its
	// jobs
	rated map[string][]int64
	// ratedBy names each of those leases: job, step, nonce
	ratedBy map[string][]string
}

func newFlowRun(t *testing.T, seed uint64, steps int, lossy bool) *flowRun {
	t.Helper()
	r := &flowRun{
		t: t, ctx: context.Background(), seed: seed, steps: steps,
		rng:     rand.New(rand.NewPCG(seed, 0xf10e)),
		clk:     &testClock{now: time.Now().Truncate(time.Millisecond)},
		jobs:    map[string]*fjob{},
		gone:    map[string]bool{},
		counts:  map[string]int{},
		rated:   map[string][]int64{},
		ratedBy: map[string][]string{},

		workerGone: map[string]bool{},
	}
	var rdb redis.UniversalClient
	r.name, rdb, r.direct, r.proxy = modelRedis(t, lossy, seed, lua.Enqueue, lua.Claim, lua.Ack, lua.Cancel, lua.Delete,
		lua.Redrive, lua.Maintain, lua.RunNow, lua.Reroute)
	r.st = store.New(rdb, store.Config{
		NS: redistest.NewNamespace(t), RetainCompleted: time.Hour, RetainArchived: 6 * time.Hour,
		RetainCancelled: 2 * time.Hour, CrashLimit: 3, CrashDelay: time.Second, Now: r.clk.Now,
	})
	r.p = r.st.Partition("q", 0)
	r.epoch = r.clk.Now()
	return r
}

func (r *flowRun) now() int64 { return r.clk.Now().UnixMilli() }

func (r *flowRun) logf(format string, a ...any) {
	r.log = keepLast(r.log, fmt.Sprintf("step %d [t%+v]: ", r.step, r.clk.Now().Sub(r.epoch))+fmt.Sprintf(format, a...),
		"SLUICE_FLOWMODEL_LOG", flowLogKeep)
}

func (r *flowRun) fail(format string, a ...any) {
	r.t.Helper()
	phase := "step"
	if r.drained {
		phase = "drain round"
	}
	r.t.Fatalf("flow model %s: %s\n\nseed %d, %s %d; reproduce with\n  SLUICE_FLOWMODEL_SEED=%d SLUICE_FLOWMODEL_STEPS=%d go test -count=1 -run 'TestFlowModel/%s' ./internal/store/\n(SLUICE_FLOWMODEL_LOG=n shows the last n operations)\nlast operations:\n  %s",
		r.name, fmt.Sprintf(format, a...), r.seed, phase, r.step, r.seed, r.steps, r.name, strings.Join(r.log, "\n  "))
}

func (r *flowRun) run() {
	r.t.Helper()
	start := time.Now()
	r.logf("start: partition tag %s", r.p.Tag())
	r.check(true)
	for r.step = 1; r.step <= r.steps; r.step++ {
		r.randomOp()
		r.check(r.step%10 == 0)
	}
	r.drain()
	r.checkRates()
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
	r.t.Logf("flow model %s: %d steps in %v, %d jobs at the end%s; %s", r.name, r.steps, time.Since(start).Round(time.Millisecond),
		len(r.jobs), fired, strings.Join(ks, " "))
}

// ids lists the model's jobs, sorted, so that a seed reproduces a run.
func (r *flowRun) ids() []string {
	return slices.Sorted(maps.Keys(r.jobs))
}

func (r *flowRun) inState(states ...string) []*fjob {
	var out []*fjob
	for _, id := range r.ids() {
		if j := r.jobs[id]; slices.Contains(states, j.state) {
			out = append(out, j)
		}
	}
	return out
}

// read takes a snapshot of Redis: the model's jobs (and extra, when
// given), the unique keys, holds and counters of the pools.
func (r *flowRun) read(full bool, extra ...string) *fsnap {
	ctx := r.ctx
	ids := append(r.ids(), extra...)
	for id := range r.gone {
		ids = append(ids, id)
	}
	s := &fsnap{jobs: map[string]fstate{}, uq: map[string]string{}, qh: map[string]string{}, heldOn: map[string][]string{}, cc: map[string]int{}}
	hcmds := make([]*redis.SliceCmd, len(ids))
	uqc := make([]*redis.StringCmd, len(flowUKeys))
	qhc := make([]*redis.StringCmd, len(flowFPrints))
	qwc := make([]*redis.StringSliceCmd, len(flowFPrints))
	var ccc *redis.MapStringStringCmd
	_, err := r.direct.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, id := range ids {
			hcmds[i] = pl.HMGet(ctx, r.p.Job(id), keys.FieldState, keys.FieldConcurrencyKey, keys.FieldUnique, keys.FieldHoldFingerprint,
				keys.FieldHeldBy, keys.FieldLeaseID, keys.FieldFence, keys.FieldRedrives, keys.FieldRateClass, keys.FieldCrashAttempt, keys.FieldPayload,
				keys.FieldStickyWorker, keys.FieldStickyMode, keys.FieldStickyFallback, keys.FieldPriority, keys.FieldRunAt)
		}
		for i, k := range flowUKeys {
			uqc[i] = pl.Get(ctx, r.p.Unique(k))
		}
		for i, fp := range flowFPrints {
			qhc[i] = pl.Get(ctx, r.p.QuarantineHold(fp))
			qwc[i] = pl.LRange(ctx, r.p.HeldOn(fp), 0, -1)
		}
		ccc = pl.HGetAll(ctx, r.p.Concurrency())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		r.fail("reading Redis: %v", err)
	}
	for i, id := range ids {
		v := hcmds[i].Val()
		str := func(k int) string { x, _ := v[k].(string); return x }
		num := func(k int) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
		if v[0] == nil {
			s.jobs[id] = fstate{}
			continue
		}
		s.jobs[id] = fstate{exists: true, state: store.StateName(str(0)), ck: str(1), uk: str(2), qf: str(3), qb: str(4),
			lease: str(5), fence: num(6), redrives: num(7), rc: str(8), crashes: num(9), payload: str(10),
			sw: str(11), sm: str(12), sf: str(13), pr: num(14), runAt: num(15)}
	}
	for i, k := range flowUKeys {
		if v, err := uqc[i].Result(); err == nil {
			s.uq[k] = v
		}
	}
	for i, fp := range flowFPrints {
		if v, err := qhc[i].Result(); err == nil {
			s.qh[fp] = v
		}
		s.heldOn[fp] = qwc[i].Val()
	}
	for k, v := range ccc.Val() {
		s.cc[k], _ = strconv.Atoi(v)
	}
	r.readStickyExtra(s)
	r.readPromises(s)
	if full {
		iter := r.direct.Scan(ctx, 0, r.p.Job("*"), 1000).Iterator()
		for iter.Next(ctx) {
			s.scanned = append(s.scanned, strings.TrimPrefix(iter.Val(), r.p.Job("")))
		}
		if err := iter.Err(); err != nil {
			r.fail("SCAN: %v", err)
		}
	}
	return s
}

// quarantined lists the jobs of fingerprint fp quarantined in s.
func (s *fsnap) quarantined(fp string) []string {
	var out []string
	for id, j := range s.jobs {
		if j.exists && j.state == "quarantined" && j.qf == fp {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// uniqueHolder is the job holding unique key k in s (unique_holder: the
// job the key names, while it has not finished), or "".
func (s *fsnap) uniqueHolder(k string) string {
	id := s.uq[k]
	if j := s.jobs[id]; id != "" && j.exists && !terminalStates[j.state] {
		return id
	}
	return ""
}

// check reads Redis and fails the run unless it keeps the invariants.
func (r *flowRun) check(full bool) {
	r.t.Helper()
	s := r.read(full)
	r.snap = s
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }

	// the model's jobs: there, in their state class
	for _, id := range r.ids() {
		j, got := r.jobs[id], s.jobs[id]
		if !got.exists {
			add("job %s (%s) is lost: no hash", id, j.state)
			continue
		}
		if coarse(got.state) != j.state {
			add("job %s is %s, the model says %s", id, got.state, j.state)
		}
		if j.state == "running" && (got.lease != j.lease || got.fence != j.fence) {
			add("running job %s holds lease %s/%d, the model says %s/%d", id, got.lease, got.fence, j.lease, j.fence)
		}
		if got.payload != j.payload {
			add("job %s has payload %q, the model says %q", id, got.payload, j.payload)
		}
		if got.ck != j.ck || got.rc != j.rc || got.uk != j.uk {
			add("job %s has keys ck %q rc %q uk %q, enqueued with %q %q %q", id, got.ck, got.rc, got.uk, j.ck, j.rc, j.uk)
		}
	}
	for id := range r.gone {
		if s.jobs[id].exists {
			add("deleted job %s exists (%s)", id, s.jobs[id].state)
		}
	}
	if full {
		for _, id := range s.scanned {
			if r.jobs[id] == nil {
				add("job %s exists (%s), which the model does not know", id, s.jobs[id].state)
			}
		}
	}
	// concurrency keys
	running := map[string][]string{}
	for _, id := range r.ids() {
		if g := s.jobs[id]; g.exists && g.state == "running" && g.ck != "" {
			running[g.ck] = append(running[g.ck], id)
		}
	}
	for _, k := range flowCKeys {
		if n := len(running[k]); n == flowCLimit[k] {
			r.counts["cc-at-limit"]++
		} else if n > flowCLimit[k] {
			add("concurrency key %s (limit %d) runs %d jobs: %v", k, flowCLimit[k], n, running[k])
		}
		if s.cc[k] != len(running[k]) {
			add("concurrency key %s counts %d running, %d run: %v", k, s.cc[k], len(running[k]), running[k])
		}
	}
	// unique keys
	for _, k := range flowUKeys {
		holder := s.uq[k]
		if holder != "" {
			if g := s.jobs[holder]; !g.exists || terminalStates[g.state] || g.uk != k {
				// a holder that finished or was deleted frees the key
				// (finish, remove_job); none of the model's keys has a TTL
				add("unique key %s names %s, which is %s with key %q", k, holder, orGone(g), g.uk)
			}
		}
		for _, id := range r.ids() {
			if g := s.jobs[id]; g.exists && g.uk == k && !terminalStates[g.state] && id != holder && g.redrives == 0 {
				add("unfinished job %s (%s) carries unique key %s, which names %q", id, g.state, k, holder)
			}
		}
	}
	// quarantine holds
	for _, id := range r.ids() {
		g, j := s.jobs[id], r.jobs[id]
		if !g.exists {
			continue
		}
		if g.qb != "" && !terminalStates[g.state] {
			q := s.jobs[g.qb]
			// held with a deadline, it is listed at it (lib_ready.lua
			// held_due), for the claim that meets it to archive
			listed := g.state == "available" && j.deadline != 0
			if g.state != "scheduled" && !listed || !q.exists || q.state != "quarantined" || q.qf != g.qf || !slices.Contains(s.heldOn[g.qf], id) {
				add("job %s (%s, fingerprint %s) is held by %s, which is %s with fingerprint %q; held list %v",
					id, g.state, g.qf, g.qb, orGone(q), q.qf, s.heldOn[g.qf])
			}
			if g.state == "scheduled" && j.deadline != 0 && g.runAt != j.deadline {
				// never due else, it would outlive its deadline, and a
				// parent joining it would wait for ever
				add("job %s held by %s is due at %d, not at its deadline %d", id, g.qb, g.runAt, j.deadline)
			}
			if g.qf != "" {
				j.mustHold = true
			}
		} else if g.state == "scheduled" && j.snoozedTo != 0 {
			// snoozed: due when its delay ends, or at its deadline when
			// that is sooner (a claim then archives it: it could not run
			// before its delay ended)
			if g.runAt != j.snoozedTo {
				add("job %s snoozed is scheduled at %d, want %d (its deadline %d, now %d)", id, g.runAt, j.snoozedTo,
					j.deadline, r.now())
			} else if g.runAt == j.deadline {
				r.counts["snoozed-to-deadline"]++
			}
		} else if g.state == "scheduled" && j.deadline > r.now() && g.runAt >= j.deadline {
			// due at or past a deadline still ahead (a debounce moved it
			// there), a claim would archive it unrun
			add("job %s is scheduled at %d, at or past its deadline %d (now %d)", id, g.runAt, j.deadline, r.now())
		}
		if j.mustHold && g.qf != "" {
			if len(s.quarantined(g.qf)) == 0 {
				j.mustHold = false
			} else if g.qb == "" && !terminalStates[g.state] {
				add("job %s (%s) of fingerprint %s, held before, is held no more while %v of it are quarantined",
					id, g.state, g.qf, s.quarantined(g.qf))
			}
		}
	}
	bad = append(bad, r.checkListings(s)...)
	bad = append(bad, r.checkPromises(s)...)
	if len(bad) > 0 {
		r.fail("invariants broken:\n  %s", strings.Join(bad, "\n  "))
	}
}

func orGone(g fstate) string {
	if !g.exists {
		return "gone"
	}
	return g.state
}

// drain releases every quarantined job and runs the clock on, claiming
// and completing, until every job has finished: each pending job must be
// claimable in the end.
func (r *flowRun) drain() {
	r.t.Helper()
	r.drained = true
	for _, j := range r.inState("running") {
		r.ackJobs([]*fjob{j}, []store.Code{store.CodeOK})
	}
	for r.step = 1; ; r.step++ {
		r.check(true)
		s := r.snap
		var q, left []string
		for _, id := range r.ids() {
			switch r.jobs[id].state {
			case "quarantined":
				q = append(q, id)
			case "pending", "running":
				left = append(left, id)
			}
		}
		if len(q) == 0 && len(left) == 0 {
			for fp, l := range s.heldOn {
				if len(l) > 0 {
					r.fail("drained, yet the held list of %s holds %v", fp, l)
				}
			}
			for k, n := range s.cc {
				if n != 0 {
					r.fail("drained, yet concurrency key %s counts %d running", k, n)
				}
			}
			return
		}
		if r.step > 300 {
			var desc []string
			for _, id := range left {
				g := s.jobs[id]
				desc = append(desc, fmt.Sprintf("%s %s ck=%q rc=%q uk=%q qf=%q qb=%q", id, g.state, g.ck, g.rc, g.uk, g.qf, g.qb))
			}
			r.fail("after 300 drain rounds jobs are still unfinished (quarantined %v):\n  %s", q, strings.Join(desc, "\n  "))
		}
		if len(q) > 0 {
			r.release(q)
			r.check(false) // the jobs held by them are held no more
		}
		d := 10 * time.Second
		if r.step%10 == 0 {
			d = 10 * time.Minute
		}
		r.advance(d)
		r.logf("drain: tick %s", d)
		r.maintain()
		// each claim checks what it leased against a fresh snapshot
		r.check(false)
		// the workers claim in turn; after 15 rounds every worker is
		// back (before, the fallbacks of jobs pinned to gone ones apply)
		if r.step == 15 {
			// by now (over ten minutes on) every deadline has passed: a
			// job pinned to a gone worker, waiting for it alone, ended at
			// its deadline all the same
			for _, id := range r.ids() {
				if j := r.jobs[id]; j.deadline != 0 && (j.state == "pending" || j.state == "running") {
					r.fail("job %s (%s) outlived its deadline %d (now %d): Redis %s @%s/%s", id, j.state, j.deadline,
						r.now(), s.jobs[id].state, s.jobs[id].sw, s.jobs[id].sm)
				}
			}
			for _, w := range flowWorkers {
				if r.workerGone[w] {
					r.setWorker(w, true)
				}
			}
		}
		for i := range 5 * (len(flowWorkers) + 1) {
			w := append(slices.Clone(flowWorkers), flowAnon)[i%(len(flowWorkers)+1)]
			if r.workerGone[w] {
				continue
			}
			got := r.claimAs(20, w)
			if len(got) == 0 {
				continue
			}
			codes := make([]store.Code, len(got))
			for i := range codes {
				codes[i] = store.CodeOK
			}
			r.ackJobs(got, codes)
			r.check(false)
		}
	}
}

// advance moves the store clock by d (back, when negative).
func (r *flowRun) advance(d time.Duration) {
	r.clk.Advance(d)
	if d > 0 {
		r.refilled += d.Milliseconds()
	}
}

// checkRates fails the run if a rate class let more jobs start than its
// token bucket holds: between any two leases, at most burst + jobs *
// refill / per, refill the store time (ms) the bucket refilled meanwhile.
func (r *flowRun) checkRates() {
	for _, c := range flowRClass {
		rt, at := flowRate[c], r.rated[c]
		n, per, burst := int64(rt[0]), int64(rt[1]), int64(rt[2])
		for i := range at {
			for j := i; j < len(at); j++ {
				if count := int64(j - i + 1); (count-burst)*per > n*(at[j]-at[i]) {
					r.fail("rate class %s (%d per %dms, burst %d) leased %d jobs in %dms of refill: %v (all leases: %v)",
						c, n, per, burst, count, at[j]-at[i], r.ratedBy[c][i:j+1], r.ratedBy[c])
				}
			}
		}
		r.counts["rated-"+c] = len(at)
	}
}
